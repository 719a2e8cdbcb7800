// Latency histograms: log2 buckets, quantiles (exact from tail samples) and the drawn rows.
#include <gtest/gtest.h>

#include "syscall_nrs.h"
#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/diagnose/histogram.hpp"
#include "gpufeed/diagnose/mounts.hpp"
#include "gpufeed/diagnose/proc_stats.hpp"
#include "gpufeed/diagnose/syscalls.hpp"

namespace gpufeed {
namespace {

TEST(Histogram, Log2BucketsAndInterpolatedQuantiles) {
  LatencyHistogram h;
  for (int i = 0; i < 100; ++i) h.add(3000);  // bucket [2048, 4096)
  EXPECT_EQ(h.count, 100U);
  EXPECT_EQ(h.slots[11], 100U);
  EXPECT_DOUBLE_EQ(h.mean_ns(), 3000);
  auto p50 = h.quantile_ns(0.5);
  ASSERT_TRUE(p50);
  EXPECT_GE(*p50, 2048);
  EXPECT_LE(*p50, 4096);
  EXPECT_FALSE(LatencyHistogram{}.quantile_ns(0.5));
}

TEST(Histogram, ExactTailSamplesGiveExactQuantiles) {
  // 100 calls, all slow: the quantiles come from the exact durations, so a
  // 20 ms median is 20 ms, not "somewhere in 16-33 ms".
  LatencyHistogram h;
  std::vector<double> exact;
  for (int i = 0; i < 100; ++i) {
    const double ns = 20e6 + (i - 50) * 1e4;
    h.add(static_cast<std::uint64_t>(ns));
    exact.push_back(ns);
  }
  auto p50 = h.quantile_ns(0.5, exact, 1e6);
  ASSERT_TRUE(p50);
  EXPECT_NEAR(*p50, 20e6, 2e4);
  // Mixed: 60 fast calls under the threshold, 40 slow ones: p50 is fast.
  LatencyHistogram mixed;
  std::vector<double> slow;
  for (int i = 0; i < 60; ++i) mixed.add(10000);
  for (int i = 0; i < 40; ++i) {
    mixed.add(30000000);
    slow.push_back(30e6);
  }
  EXPECT_LT(*mixed.quantile_ns(0.5, slow, 1e6), 1e6);
  EXPECT_DOUBLE_EQ(*mixed.quantile_ns(0.99, slow, 1e6), 30e6);
}

TEST(Histogram, DrawsOneRowPerBucketBetweenFirstAndLast) {
  LatencyHistogram h;
  h.add(1500);
  h.add(9000);
  auto rows = draw_histogram(h, 10);
  ASSERT_EQ(rows.size(), 4U);  // 1-2 us, 2-4 us and 4-8 us (empty), 8-16 us
  EXPECT_NE(rows[0].find("|**********|"), std::string::npos) << rows[0];
}

}  // namespace
}  // namespace gpufeed
