#pragma once
// Latency histograms as the kernel keeps them: log2 buckets of nanoseconds
// (bucket k holds [2^k, 2^(k+1)) ns), with count and total. Quantiles are
// interpolated inside a bucket; where exact samples above a threshold exist
// (the slow calls user space received), the tail is read from those.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpufeed {

inline constexpr int kHistogramSlots = 40;

struct LatencyHistogram {
  std::uint64_t count = 0;
  std::uint64_t total_ns = 0;
  std::uint64_t bytes = 0;  // payload moved by read-like calls, when counted
  std::array<std::uint64_t, kHistogramSlots> slots{};

  void add(std::uint64_t ns);  // for tests and fakes
  void merge(const LatencyHistogram& other);
  // What was added since `earlier`, a snapshot of the same counters.
  LatencyHistogram since(const LatencyHistogram& earlier) const;
  double mean_ns() const { return count ? static_cast<double>(total_ns) / static_cast<double>(count) : 0.0; }
  // q in [0,1]; nullopt when empty.
  std::optional<double> quantile_ns(double q) const;
  // Quantile using exact samples for everything at or above `threshold_ns`
  // (the calls recorded individually) and the buckets below it.
  std::optional<double> quantile_ns(double q, const std::vector<double>& exact_at_or_above,
                                    double threshold_ns) const;
};

// Draws the histogram as rows "  4 ms .. 8 ms   123 |*****     |".
std::vector<std::string> draw_histogram(const LatencyHistogram& h, int width = 30);

std::string format_duration_ns(double ns);  // "812 ns", "47.2 us", "3.10 ms", "1.25 s"

}  // namespace gpufeed
