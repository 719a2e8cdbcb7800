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

// Names of loaded BPF programs that start with `prefix` (from bpftool),
// polling up to `settle_s` for the kernel to free programs of exited owners.
std::vector<std::string> loaded_bpf_programs(const std::string& prefix, double settle_s = 0);

// Why the eBPF system tests cannot run here, or nullopt.
std::optional<std::string> ebpf_unavailable_reason();

// The demo's built-in starving job (scripts/demo_job.py) as a shell command:
// its loop reads items through a pipe from a producer that needs 40 ms per
// item and steps 5 ms per item, so it waits about 87% of the time.
std::string demo_job_command(int seconds);

// /usr/bin/python3 with python3-torch, or a reason it is missing.
std::optional<std::string> torch_unavailable_reason();

// 240 ~50 KB JPEGs in 4 classes (tests/fixtures/make_dataset.py, seed 7)
// for the PyTorch jobs, made once per test process on first use and
// removed at its exit; null when the script failed.
const TempDir* shared_jpeg_dataset();

}  // namespace gpufeed::testing
