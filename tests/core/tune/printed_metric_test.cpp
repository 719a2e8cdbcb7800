// A job's printed throughput: the last match of --metric-regex, and whether
// it has printed a figure above 0 yet.
#include "gpufeed/tune/printed_metric.hpp"

#include <gtest/gtest.h>

namespace gpufeed::tune {
namespace {

const std::regex kMetric("samples/s: ([0-9.]+)");

TEST(PrintedMetric, TheLastFigureCounts) {
  const auto f = last_figure("epoch 1 samples/s: 0\nsamples/s: 80.5\nwarn\nsamples/s: 96\n", kMetric);
  ASSERT_TRUE(f.last);
  EXPECT_DOUBLE_EQ(*f.last, 96);
  EXPECT_TRUE(f.moved);
}

TEST(PrintedMetric, ZeroesAreStillStartingAndNothingIsNoFigure) {
  const std::string zeroes = "samples/s: 0\nsamples/s: 0.0\n";
  const auto f = last_figure(zeroes, kMetric);
  ASSERT_TRUE(f.last);
  EXPECT_DOUBLE_EQ(*f.last, 0);
  EXPECT_FALSE(f.moved);
  EXPECT_FALSE(has_figure(zeroes.cbegin(), zeroes.cend(), kMetric));
  EXPECT_FALSE(last_figure("loading...\n", kMetric).last);
  const std::string later = zeroes + "samples/s: 12\n";
  EXPECT_TRUE(has_figure(later.cbegin(), later.cend(), kMetric));
}

TEST(PrintedMetric, AGroupThatIsNoNumberIsSkipped) {
  const std::regex loose("rate=(\\S+)");
  const auto f = last_figure("rate=12\nrate=fast\n", loose);
  ASSERT_TRUE(f.last);
  EXPECT_DOUBLE_EQ(*f.last, 12);
}

}  // namespace
}  // namespace gpufeed::tune
