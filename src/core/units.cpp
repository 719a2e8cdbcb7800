#include "gpufeed/units.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <map>
#include <cmath>

#include <fmt/format.h>

#include "gpufeed/error.hpp"
#include "gpufeed/text.hpp"

namespace gpufeed {

std::string format_bytes(std::uint64_t bytes) {
  static constexpr std::array kUnits{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  // Whole numbers print without a decimal so that "16 GiB" reads as exact.
  if (std::fabs(value - std::round(value)) < 0.05 || value >= 100) {
    return fmt::format("{:.0f} {}", value, kUnits[unit]);
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::uint64_t parse_size(const std::string& text, const std::string& option) {
  static const std::map<std::string, double> units = {
      {"", 1},          {"b", 1},          {"k", 1e3},        {"kb", 1e3},       {"m", 1e6},
      {"mb", 1e6},      {"g", 1e9},        {"gb", 1e9},       {"t", 1e12},       {"tb", 1e12},
      {"kib", 1024.0},  {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0}};
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  std::string unit(ptr, end);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  const auto it = units.find(unit);
  // nan, inf and sizes past an exbibyte are no size a machine has (and would
  // overflow the conversion below).
  constexpr double kMost = 1152921504606846976.0;  // 1 EiB
  if (ec != std::errc() || it == units.end() || !std::isfinite(value) || value < 0 || value * it->second > kMost) {
    throw usage_error(fmt::format("{} \"{}\" is not a size", option, printable(text)),
                      "give bytes with a unit, up to 1 EiB, e.g. 512MiB, 2GiB, 50KiB");
  }
  return static_cast<std::uint64_t>(value * it->second);
}

}  // namespace gpufeed
