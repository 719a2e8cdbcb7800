#pragma once
// The Prometheus text exposition format, version 0.0.4: what a scrape of
// `gpufeed monitor`'s /metrics returns. Small on purpose: gauges, counters
// and histograms with labels, names checked and label values escaped as the
// format defines; `promtool check metrics` on a real scrape is its test.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpufeed::prom {

using Labels = std::vector<std::pair<std::string, std::string>>;

enum class Type { Gauge, Counter, Histogram };

struct Sample {
  Labels labels;
  double value = 0;
};

// Cumulative buckets, as Prometheus keeps them: `buckets[i]` counts the
// observations <= `bounds[i]`; the +Inf bucket is `count`.
struct HistogramSample {
  Labels labels;
  std::vector<double> bounds;
  std::vector<std::uint64_t> buckets;
  double sum = 0;
  std::uint64_t count = 0;
};

struct Family {
  std::string name;  // counters end in _total, as the conventions ask
  std::string help;
  Type type = Type::Gauge;
  std::vector<Sample> samples;             // gauges and counters
  std::vector<HistogramSample> histograms;  // histograms
};

bool valid_metric_name(std::string_view name);  // [a-zA-Z_:][a-zA-Z0-9_:]*
bool valid_label_name(std::string_view name);   // [a-zA-Z_][a-zA-Z0-9_]*, not __reserved
std::string escape_label_value(std::string_view v);  // \\ \" \n
std::string format_value(double v);             // shortest round-trip form; +Inf, -Inf, NaN

// The families as one exposition, in the order given. Throws
// std::invalid_argument for an invalid name (a programming error).
std::string exposition(const std::vector<Family>& families);

inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace gpufeed::prom
