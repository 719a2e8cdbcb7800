#pragma once
// The few OS calls the loader's hooks need, kept out of the core.
#include <atomic>
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

namespace gpufeed::loader {

// gpufeed's one signal policy (docs/exit-codes.md). Outside any
// StopOnSignal, SIGINT and SIGTERM end the process at once, as they do any
// program: nothing is held that needs cleaning up. While one is alive (a run
// with figures to report, a trace attached, a job launched), they set
// flag() instead, and every long phase of that run checks it and ends
// within a second. Scopes nest: an inner one shares the outer's flag, so a
// signal that came before it is not lost. The previous handlers come back
// when the outermost ends.
class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  const std::atomic<bool>& flag() const;
};

// True when a signal asked the current StopOnSignal scope to stop; false
// outside any (for code that is handed no flag, such as a listing).
bool stop_requested();

}  // namespace gpufeed::loader
