#pragma once
// One parser for every option value (docs/exit-codes.md): numbers are
// finite and within their range, with the unit in the message; sizes and
// step times parse as the run will parse them; paths follow the output and
// input policies. All of it runs while the command line is parsed, before
// any work starts (no BPF program loaded, no dataset listed), and a bad
// value is a usage error (exit 2) naming the option and the fix.
#include <CLI/CLI.hpp>
#include <string>

#include "gpufeed/input_file.hpp"

namespace gpufeed::cli {

struct Range {
  double lo = 0;
  double hi = 0;
  std::string unit;           // "seconds", "workers", "" (a plain number)
  bool lo_exclusive = false;  // (lo, hi] rather than [lo, hi]
  std::string example;        // a good value, for the hint
};

// A decimal number in `range` (nan, inf and 1e308 are refused).
CLI::Validator real_in(const std::string& flag, const Range& range);
// A whole number in `range`, written in digits.
CLI::Validator whole_in(const std::string& flag, const Range& range);
// A size such as 512MiB (parse_size), at most `max_bytes`.
CLI::Validator size_value(const std::string& flag);
// MS or MEAN:SPREAD (parse_step_time).
CLI::Validator step_time_value(const std::string& flag);
// A path gpufeed writes (check_output_path); `stdout_dash`: '-' means stdout.
CLI::Validator output_path(const std::string& flag, bool stdout_dash);
// A file gpufeed reads (check_input_file).
CLI::Validator input_path(const std::string& flag, InputRole role);
// One of `choices`, with the list in the message.
CLI::Validator one_of(const std::string& flag, std::vector<std::string> choices);

}  // namespace gpufeed::cli
