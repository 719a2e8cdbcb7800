#include "trace_targets.hpp"

#include <unistd.h>

#include "gpufeed/error.hpp"
#include "gpufeed/trace/proc_reader.hpp"

namespace gpufeed::cli {

void check_trace_targets(const std::vector<int>& pids, bool force, const HostPaths& host) {
  const ProcReader proc(host);
  for (int pid : pids) {
    const auto stat = proc.pid_stat(pid);
    if (!stat) continue;
    if (const auto problem = trace_target_problem(*stat, static_cast<int>(::getpid()), force)) {
      throw usage_error(*problem, pid == 1 ? "give the training job's PID (pgrep -f train.py), or add --force"
                                           : "give the training job's PID, e.g. $(pgrep -f train.py | head -1)");
    }
  }
}

}  // namespace gpufeed::cli
