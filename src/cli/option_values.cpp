#include "option_values.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "gpufeed/atomic_file.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/loader/basic_steps.hpp"
#include "gpufeed/setting.hpp"
#include "gpufeed/text.hpp"
#include "gpufeed/units.hpp"

namespace gpufeed::cli {
namespace {

// Whole bounds in digits (4194304, not 4.19e+06); others as %g.
std::string number_text(double v) {
  if (std::fabs(v) < 1e15 && v == std::floor(v)) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:g}", v);
}

std::string range_hint(const std::string& flag, const Range& r) {
  const std::string unit = r.unit.empty() ? "" : r.unit + " ";
  const std::string from = r.lo_exclusive ? fmt::format("more than {}", number_text(r.lo)) : "from " + number_text(r.lo);
  return fmt::format("give {}{} to {}{}", unit, from, number_text(r.hi),
                     r.example.empty() ? "" : fmt::format(", e.g. {} {}", flag, r.example));
}

Error bad_number(const std::string& flag, const std::string& text, const std::string& problem, const Range& r) {
  return usage_error(fmt::format("{} {}: {}", flag, text.empty() ? "''" : printable(text), problem), range_hint(flag, r));
}

void check_range(const std::string& flag, const std::string& text, double v, const Range& r) {
  if (!std::isfinite(v)) throw bad_number(flag, text, "not a finite number", r);
  const bool low = r.lo_exclusive ? !(v > r.lo) : v < r.lo;
  if (low) throw bad_number(flag, text, r.lo_exclusive ? "must be more than " + number_text(r.lo) : "below the least value", r);
  if (v > r.hi) throw bad_number(flag, text, "above the largest value", r);
}

}  // namespace

CLI::Validator real_in(const std::string& flag, const Range& range) {
  return CLI::Validator(
      [flag, range](std::string& text) {
        double v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        // from_chars takes "inf" and "nan"; an overflow (1e999) is ec.
        if (text.empty() || ptr != end || ec != std::errc()) throw bad_number(flag, text, "not a number", range);
        check_range(flag, text, v, range);
        return std::string();
      },
      "");
}

CLI::Validator whole_in(const std::string& flag, const Range& range) {
  return CLI::Validator(
      [flag, range](std::string& text) {
        long long v = 0;
        const char* begin = text.data() + (!text.empty() && text[0] == '+' ? 1 : 0);
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(begin, end, v);
        if (text.empty() || ptr != end) throw bad_number(flag, text, "not a whole number", range);
        if (ec != std::errc()) throw bad_number(flag, text, "above the largest value", range);
        check_range(flag, text, static_cast<double>(v), range);
        return std::string();
      },
      "");
}

CLI::Validator size_value(const std::string& flag) {
  return CLI::Validator(
      [flag](std::string& text) {
        parse_size(text, flag);
        return std::string();
      },
      "");
}

CLI::Validator step_time_value(const std::string& flag) {
  return CLI::Validator(
      [flag](std::string& text) {
        // Parsing runs before a command is chosen: the message names this flag.
        SettingSpelling spelling([&flag](Setting s) -> std::optional<std::string> {
          return s == Setting::step_ms ? std::optional<std::string>(flag) : std::nullopt;
        });
        loader::parse_step_time(text);
        return std::string();
      },
      "");
}

namespace {

// The path checks' messages name the file; the command line's name the option too.
template <typename Check>
void naming_flag(const std::string& flag, Check check) {
  try {
    check();
  } catch (const Error& e) {
    throw Error(e.kind(), flag + ": " + e.what(), e.hint());
  }
}

}  // namespace

CLI::Validator output_path(const std::string& flag, bool stdout_dash) {
  return CLI::Validator(
      [flag, stdout_dash](std::string& text) {
        if (stdout_dash && text == "-") return std::string();
        // "--json= -- cmd" hands CLI11's "--" over as the value: a file so
        // named is far more likely a slip than a wish.
        if (text.size() > 1 && text[0] == '-') {
          throw usage_error(fmt::format("{} {}: an output that looks like an option", flag, printable(text)),
                            "give ./" + printable(text) + " for a file of that name");
        }
        naming_flag(flag, [&] { check_output_path(text); });
        return std::string();
      },
      "");
}

CLI::Validator input_path(const std::string& flag, InputRole role) {
  return CLI::Validator(
      [flag, role](std::string& text) {
        naming_flag(flag, [&] { check_input_file(text, role); });
        return std::string();
      },
      "");
}

CLI::Validator one_of(const std::string& flag, std::vector<std::string> choices) {
  return CLI::Validator(
      [flag, choices](std::string& text) {
        if (std::find(choices.begin(), choices.end(), text) != choices.end()) return std::string();
        std::string list;
        for (std::size_t i = 0; i < choices.size(); ++i) {
          list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
        }
        throw usage_error(fmt::format("{} {} is not known", flag, text.empty() ? "''" : printable(text)), "use " + list);
      },
      "");
}

}  // namespace gpufeed::cli
