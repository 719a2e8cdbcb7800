// The Prometheus text writer: families, escaping, special values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "syscall_nrs.h"
#include "gpufeed/monitor/evidence_window.hpp"
#include "gpufeed/monitor/finding_log.hpp"
#include "gpufeed/monitor/gpu_window.hpp"
#include "gpufeed/monitor/monitor_metrics.hpp"
#include "gpufeed/monitor/prometheus_text.hpp"

namespace gpufeed {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(PrometheusText, GaugesCountersAndHistogramsInTheTextFormat) {
  prom::Family g{"gpufeed_x_ratio", "A \\ ratio\nover two lines", prom::Type::Gauge, {{{{"rank", "0"}}, 0.25}}, {}};
  prom::Family c{"gpufeed_y_total", "Things", prom::Type::Counter, {{{}, 3}}, {}};
  prom::HistogramSample h{{{"mount", "/data"}}, {0.01, 0.1}, {2, 5}, 0.42, 7};
  prom::Family hist{"gpufeed_z_seconds", "Latency", prom::Type::Histogram, {}, {h}};
  const std::string text = prom::exposition({g, c, hist});
  EXPECT_TRUE(contains(text, "# HELP gpufeed_x_ratio A \\\\ ratio\\nover two lines\n"));
  EXPECT_TRUE(contains(text, "# TYPE gpufeed_x_ratio gauge\ngpufeed_x_ratio{rank=\"0\"} 0.25\n"));
  EXPECT_TRUE(contains(text, "# TYPE gpufeed_y_total counter\ngpufeed_y_total 3\n"));
  EXPECT_TRUE(contains(text, "gpufeed_z_seconds_bucket{mount=\"/data\",le=\"0.01\"} 2\n"));
  EXPECT_TRUE(contains(text, "gpufeed_z_seconds_bucket{mount=\"/data\",le=\"0.1\"} 5\n"));
  EXPECT_TRUE(contains(text, "gpufeed_z_seconds_bucket{mount=\"/data\",le=\"+Inf\"} 7\n"));
  EXPECT_TRUE(contains(text, "gpufeed_z_seconds_sum{mount=\"/data\"} 0.42\ngpufeed_z_seconds_count{mount=\"/data\"} 7\n"));
}

TEST(PrometheusText, LabelValuesAreEscapedAndNamesChecked) {
  EXPECT_EQ(prom::escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_TRUE(prom::valid_metric_name("gpufeed_loop:rate5m"));
  EXPECT_FALSE(prom::valid_metric_name("9lives"));
  EXPECT_FALSE(prom::valid_metric_name("gpufeed-x"));
  EXPECT_FALSE(prom::valid_label_name("__name"));
  EXPECT_FALSE(prom::valid_label_name("a:b"));
  EXPECT_THROW(prom::exposition({prom::Family{"bad name", "", prom::Type::Gauge, {}, {}}}), std::invalid_argument);
  EXPECT_THROW(prom::exposition({prom::Family{"ok", "", prom::Type::Gauge, {{{{"bad-label", "v"}}, 1}}, {}}}),
               std::invalid_argument);
}

TEST(PrometheusText, ValuesRoundTripAndSpecialsAreSpelledAsTheFormatSays) {
  EXPECT_EQ(prom::format_value(0.1), "0.1");
  EXPECT_EQ(prom::format_value(1e21), "1e+21");
  EXPECT_EQ(prom::format_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(prom::format_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(prom::format_value(std::nan("")), "NaN");
  EXPECT_DOUBLE_EQ(std::stod(prom::format_value(1.0 / 3)), 1.0 / 3);
}

}  // namespace
}  // namespace gpufeed
