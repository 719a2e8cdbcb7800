#pragma once
// A child process for system tests: started with argv, output to a file,
// signalled and waited for with a bound. The destructor kills it if needed.
#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace gpufeed::testing {

class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::filesystem::path& output);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  void signal(int sig) const;
  // Exit code (128 + signal when killed), or nullopt on timeout.
  std::optional<int> wait(double timeout_s);

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// True while process `pid`'s main thread sleeps (clock_nanosleep), as the
// built-in loader's loop does during a simulated step: it has had a batch.
bool sleeping_in_a_step(pid_t pid);

}  // namespace gpufeed::testing
