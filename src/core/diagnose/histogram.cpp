#include "gpufeed/diagnose/histogram.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace gpufeed {
namespace {

double slot_low(int k) { return k == 0 ? 0.0 : std::ldexp(1.0, k); }
double slot_high(int k) { return std::ldexp(1.0, k + 1); }

}  // namespace

void LatencyHistogram::add(std::uint64_t ns) {
  int k = ns == 0 ? 0 : 63 - __builtin_clzll(ns);
  k = std::min(k, kHistogramSlots - 1);
  ++slots[static_cast<size_t>(k)];
  ++count;
  total_ns += ns;
}

LatencyHistogram LatencyHistogram::since(const LatencyHistogram& earlier) const {
  auto minus = [](std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; };
  LatencyHistogram out;
  out.count = minus(count, earlier.count);
  out.total_ns = minus(total_ns, earlier.total_ns);
  out.bytes = minus(bytes, earlier.bytes);
  for (int i = 0; i < kHistogramSlots; ++i) out.slots[i] = minus(slots[i], earlier.slots[i]);
  return out;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  count += other.count;
  total_ns += other.total_ns;
  bytes += other.bytes;
  for (size_t i = 0; i < slots.size(); ++i) slots[i] += other.slots[i];
}

std::optional<double> LatencyHistogram::quantile_ns(double q) const {
  std::uint64_t n = 0;
  for (auto s : slots) n += s;
  if (n == 0) return std::nullopt;
  const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(n);
  double seen = 0;
  for (int k = 0; k < kHistogramSlots; ++k) {
    const double in = static_cast<double>(slots[static_cast<size_t>(k)]);
    if (in > 0 && seen + in >= rank) {
      const double frac = std::clamp((rank - seen) / in, 0.0, 1.0);
      return slot_low(k) + frac * (slot_high(k) - slot_low(k));
    }
    seen += in;
  }
  return slot_high(kHistogramSlots - 1);
}

std::optional<double> LatencyHistogram::quantile_ns(double q, const std::vector<double>& exact_at_or_above,
                                                    double threshold_ns) const {
  std::uint64_t n = 0;
  for (auto s : slots) n += s;
  if (n == 0) return std::nullopt;
  // Calls at or above the threshold are known exactly; the rest only by bucket.
  std::vector<double> exact = exact_at_or_above;
  std::sort(exact.begin(), exact.end());
  const double below = static_cast<double>(n) - static_cast<double>(exact.size());
  const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(n);
  if (below < 0 || exact.empty()) return quantile_ns(q);
  if (rank > below) {
    auto i = static_cast<size_t>(std::ceil(rank - below)) - 1;
    return exact[std::min(i, exact.size() - 1)];
  }
  // Below the threshold: interpolate in the buckets, with the exactly known
  // calls taken out of the buckets they fell in.
  LatencyHistogram rest = *this;
  for (double v : exact) {
    int k = v < 1 ? 0 : std::min(kHistogramSlots - 1, static_cast<int>(std::floor(std::log2(v))));
    if (rest.slots[static_cast<size_t>(k)] > 0) --rest.slots[static_cast<size_t>(k)];
  }
  auto v = rest.quantile_ns(rank / std::max(below, 1.0));
  if (v) v = std::min(*v, threshold_ns);
  return v;
}

std::string format_duration_ns(double ns) {
  if (ns < 1e3) return fmt::format("{:.0f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.1f} us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.2f} s", ns / 1e9);
}

std::vector<std::string> draw_histogram(const LatencyHistogram& h, int width) {
  std::vector<std::string> rows;
  int first = -1, last = -1;
  std::uint64_t peak = 0;
  for (int k = 0; k < kHistogramSlots; ++k) {
    if (h.slots[static_cast<size_t>(k)] == 0) continue;
    if (first < 0) first = k;
    last = k;
    peak = std::max(peak, h.slots[static_cast<size_t>(k)]);
  }
  if (first < 0) return rows;
  for (int k = first; k <= last; ++k) {
    const auto n = h.slots[static_cast<size_t>(k)];
    const int bar = static_cast<int>(std::lround(static_cast<double>(n) * width / static_cast<double>(peak)));
    rows.push_back(fmt::format("{:>9} .. {:<9} {:>8} |{:<{}}|", format_duration_ns(slot_low(k)),
                               format_duration_ns(slot_high(k)), n, std::string(static_cast<size_t>(bar), '*'),
                               width));
  }
  return rows;
}

}  // namespace gpufeed
