#include "gpufeed/loader/os_hooks.hpp"

#include <pthread.h>
#include <sched.h>
#include <csignal>
#include <sys/resource.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "gpufeed/error.hpp"

namespace gpufeed::loader {

void bind_current_thread(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (rc != 0) {
    throw runtime_error(fmt::format("cannot bind a worker to CPUs {}: {}", fmt::join(cpus, ","), std::strerror(rc)),
                        "check the CPUs this process may use (gpufeed probe) or drop --bind");
  }
}

std::uint64_t peak_rss_bytes() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;  // ru_maxrss is in KiB on Linux
}

}  // namespace gpufeed::loader

namespace gpufeed::loader {
namespace {

std::atomic<bool> g_stop{false};
struct sigaction g_old_int {};
struct sigaction g_old_term {};

void on_stop(int) { g_stop.store(true); }

}  // namespace

StopOnSignal::StopOnSignal() {
  g_stop.store(false);
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

StopOnSignal::~StopOnSignal() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

const std::atomic<bool>& StopOnSignal::flag() const { return g_stop; }

}  // namespace gpufeed::loader
