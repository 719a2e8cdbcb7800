#pragma once
// The calling thread's own CPU time: what its work cost, without the time
// it waited for a core (a VM's other tenants, more workers than cores).
// A system call (about 0.3 us here, no vDSO): for work of milliseconds.
#include <time.h>

#include <cstdint>

namespace gpufeed {

inline std::uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace gpufeed
