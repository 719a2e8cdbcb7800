#include "exec_job.hpp"

#include <unistd.h>

#include <chrono>

#include "gpufeed/os/process_group.hpp"
#include "gpufeed/trace/proc_reader.hpp"

namespace gpufeed::cli {

std::vector<tune::JobProcess> snapshot_job(pid_t job) {
  static const double ticks_per_s = static_cast<double>(sysconf(_SC_CLK_TCK));
  const ProcReader proc;
  std::vector<int> pids = proc.children_of(job);
  pids.push_back(job);
  std::vector<tune::JobProcess> out;
  for (int pid : pids) {
    if (const auto stat = proc.pid_stat(pid)) {
      out.push_back({stat->pid, stat->ppid, static_cast<double>(stat->utime + stat->stime) / ticks_per_s});
    }
  }
  return out;
}

JobGuard::~JobGuard() {
  if (fd >= 0) close(fd);
  if (pid <= 0) return;
  int status = 0;
  os::end_process_group(pid, status, std::chrono::seconds(3));
}

}  // namespace gpufeed::cli
