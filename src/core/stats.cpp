#include "gpufeed/stats.hpp"

#include <algorithm>
#include <cmath>

namespace gpufeed {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

double inverse_normal_cdf(double q) {
  double lo = -10, hi = 10;
  for (int i = 0; i < 80; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < q ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

}  // namespace gpufeed
