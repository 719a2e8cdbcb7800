#pragma once
// The few OS calls the loader's hooks need, kept out of the core.
#include <atomic>
#include <cstdint>
#include <vector>

namespace gpufeed::loader {

// Binds the calling thread to these CPUs; throws gpufeed::Error naming the
// CPUs when the kernel refuses (e.g. CPUs outside this process's cgroup).
void bind_current_thread(const std::vector<int>& cpus);

// The process's peak resident set size so far, in bytes.
std::uint64_t peak_rss_bytes();

}  // namespace gpufeed::loader

namespace gpufeed::loader {

// While alive, SIGINT and SIGTERM set flag() instead of killing the process,
// so a long run ends early and still writes its report; the previous
// handlers come back on destruction.
class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  const std::atomic<bool>& flag() const;
};

}  // namespace gpufeed::loader
