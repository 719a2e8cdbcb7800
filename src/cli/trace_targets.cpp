#include "trace_targets.hpp"

#include <unistd.h>

#include "gpufeed/error.hpp"
#include "option_values.hpp"
#include "gpufeed/trace/proc_reader.hpp"

namespace gpufeed::cli {

CLI::Option* add_pid_option(CLI::App& cmd, std::vector<int>& pids, const std::string& help) {
  return cmd.add_option("--pid", pids, help)
      ->check(whole_in("--pid", {1, 4194304, "a process id", false, "4242"}))
      ->type_name("PID");
}

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
