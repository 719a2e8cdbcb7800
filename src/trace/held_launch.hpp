#pragma once
// The command `diagnose -- CMD` and `monitor -- CMD` run, held before its
// exec so the tracer follows it from its first instruction.
#include <sys/wait.h>

#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gpufeed/error.hpp"
#include "gpufeed/os/process_group.hpp"

namespace gpufeed {

// Starts CMD held before its exec, so it can be put in the traced set before
// its first instruction. It stays in gpufeed's process group: a terminal's
// Ctrl-C reaches the job as it would without gpufeed.
class Launch {
 public:
  explicit Launch(const std::vector<std::string>& cmd)
      : child_(cmd, os::LaunchOptions{false, true, -1, -1}), cmd0_(cmd.front()) {}
  int pid() const { return child_.pid(); }
  // Lets the command exec; throws a usage error if exec failed.
  void release() {
    if (const int err = child_.release(); err != 0) {
      int status = 0;
      waitpid(child_.pid(), &status, 0);
      throw usage_error(fmt::format("cannot run '{}': {}", cmd0_, std::strerror(err)),
                        "check the command after '--' (is it on PATH?)");
    }
  }

 private:
  os::Launched child_;
  std::string cmd0_;
};

}  // namespace gpufeed
