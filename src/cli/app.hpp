#pragma once
// The whole CLI as a function, so tests run it in-process with their own
// streams, environment and host tree, and assert exit code and output.
#include <chrono>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "gpufeed/probe/host_inspector.hpp"

namespace gpufeed::cli {

struct Io {
  Io(std::ostream& out_stream, std::ostream& err_stream) : out(out_stream), err(err_stream) {}
  std::ostream& out;
  std::ostream& err;
  bool out_is_tty = false;
  bool err_is_tty = false;  // progress lines go to stderr only on a terminal
  std::function<std::optional<std::string>(std::string_view)> env = [](std::string_view) {
    return std::optional<std::string>{};
  };
  HostPaths host;  // where /proc and /sys are read
  std::function<std::chrono::system_clock::time_point()> now = [] { return std::chrono::system_clock::now(); };
};

// The real process: std::cout/std::cerr, getenv, isatty(1), "/".
Io process_io();

// args excludes the program name. Returns the exit code (docs/exit-codes.md).
int run(const std::vector<std::string>& args, Io& io);

}  // namespace gpufeed::cli
