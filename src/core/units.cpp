#include "gpufeed/units.hpp"

#include <array>
#include <cmath>

#include <fmt/format.h>

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

}  // namespace gpufeed
