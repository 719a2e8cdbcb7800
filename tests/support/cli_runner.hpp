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

}  // namespace gpufeed::testing
