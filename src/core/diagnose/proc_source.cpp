#include "gpufeed/diagnose/proc_source.hpp"

#include <fmt/format.h>

#include <set>

#include "gpufeed/error.hpp"

namespace gpufeed {

void require_target_pids(const ProcSource& proc, const std::vector<int>& pids) {
  std::set<int> seen;
  for (int pid : pids) {
    if (pid <= 0 || !proc.alive(pid)) {
      throw usage_error(fmt::format("process {} does not exist", pid), "check the PID with 'ps' or 'pgrep -f train'");
    }
    if (!seen.insert(pid).second) throw usage_error(fmt::format("process {} is given twice", pid), "give each rank once");
  }
}

}  // namespace gpufeed
