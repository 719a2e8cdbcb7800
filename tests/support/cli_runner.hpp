#pragma once
// Runs the whole CLI in-process with captured streams.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace gpufeed::testing {

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

struct CliSetup {
  bool tty = false;
  std::map<std::string, std::string> env;
  std::filesystem::path host_root = "/";
};

CliResult run_cli(const std::vector<std::string>& args, const CliSetup& setup = {});

// Runs the real binary (build/gpufeed) with /bin/sh redirections.
CliResult run_binary(const std::string& args);

struct SpawnOptions {
  std::filesystem::path cwd;        // empty: the test's own
  std::filesystem::path stdout_to;  // empty: captured into out
  double timeout_s = 30;            // then SIGKILL
};
struct SpawnResult : CliResult {
  bool timed_out = false;
  double seconds = 0;
};

// Runs the real binary with `args` as they are (no shell, so any byte
// passes), stdout and stderr apart.
SpawnResult run_binary_argv(const std::vector<std::string>& args, const SpawnOptions& options = {});

}  // namespace gpufeed::testing
