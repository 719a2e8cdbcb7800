#include "gpufeed/loader/os_hooks.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

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

namespace {

std::optional<std::uint64_t> read_number(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word)) return std::nullopt;
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (ec != std::errc() || ptr != word.data() + word.size()) return std::nullopt;  // "max"
  return v;
}

// The threads of every process on the system: /proc/loadavg's "running/total".
std::uint64_t system_threads(const std::filesystem::path& root) {
  std::ifstream in(root / "proc/loadavg");
  std::string a, b, c, tasks;
  if (!(in >> a >> b >> c >> tasks)) return 0;
  const auto slash = tasks.find('/');
  return slash == std::string::npos ? 0 : std::strtoull(tasks.c_str() + slash + 1, nullptr, 10);
}

// This process's pids cgroup: v2's unified directory ("0::/path"), or v1's
// pids hierarchy ("N:pids:/path").
std::optional<std::filesystem::path> pids_cgroup(const std::filesystem::path& root) {
  std::ifstream in(root / "proc/self/cgroup");
  std::string line;
  std::optional<std::filesystem::path> found;
  while (std::getline(in, line)) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string rel = line.substr(second + 2);  // after ":/"
    if (controllers == "pids") return root / "sys/fs/cgroup/pids" / rel;
    if (controllers.empty() && line.rfind("0::", 0) == 0) found = root / "sys/fs/cgroup" / rel;
  }
  return found;
}

}  // namespace

ThreadHeadroom thread_headroom(const std::filesystem::path& root) {
  ThreadHeadroom h;
  auto consider = [&h](std::uint64_t limit, std::uint64_t used, const std::string& name) {
    const std::uint64_t left = limit > used ? limit - used : 0;
    if (left < h.threads) h.threads = left, h.limit = name;
  };
  const std::uint64_t running = system_threads(root);
  if (const auto max = read_number(root / "proc/sys/kernel/threads-max")) consider(*max, running, "kernel.threads-max");
  if (const auto max = read_number(root / "proc/sys/kernel/pid_max")) consider(*max, running, "kernel.pid_max");
  struct rlimit rl {};
  // Root is not held to RLIMIT_NPROC; every other user counts all its threads.
  if (root == "/" && ::geteuid() != 0 && getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    consider(static_cast<std::uint64_t>(rl.rlim_cur), running, "ulimit -u (RLIMIT_NPROC)");
  }
  if (const auto dir = pids_cgroup(root)) {
    if (const auto max = read_number(*dir / "pids.max")) {
      consider(*max, read_number(*dir / "pids.current").value_or(0), "the cgroup's pids.max");
    }
  }
  return h;
}

}  // namespace gpufeed::loader
