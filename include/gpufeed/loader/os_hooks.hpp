#pragma once
// The few OS calls the loader's hooks need, kept out of the core.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gpufeed::loader {

// Binds the calling thread to these CPUs; throws gpufeed::Error naming the
// CPUs when the kernel refuses (e.g. CPUs outside this process's cgroup).
void bind_current_thread(const std::vector<int>& cpus);

// The process's peak resident set size so far, in bytes.
std::uint64_t peak_rss_bytes();

// How many more threads this process may start before a limit refuses one:
// the least of kernel.threads-max and kernel.pid_max (less every thread on
// the system), the cgroup's pids.max (v2, or v1's pids hierarchy; less its
// pids.current) and, for a user other than root, RLIMIT_NPROC; `limit` names
// the one that binds. `root` stages /proc and /sys for tests.
struct ThreadHeadroom {
  std::uint64_t threads = UINT64_MAX;
  std::string limit;  // empty: no limit found
};
ThreadHeadroom thread_headroom(const std::filesystem::path& root = "/");

}  // namespace gpufeed::loader
