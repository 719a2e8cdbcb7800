// Backoff between S3 attempts: capped exponential ceilings, full jitter
// within them, reproducible with a seed; and which answers are retried.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "s3_retry.hpp"

namespace gpufeed::loader::s3 {
namespace {

using std::chrono::milliseconds;

TEST(S3Backoff, CeilingDoublesUpToTheCap) {
  Backoff backoff(milliseconds(100), milliseconds(5000), 1);
  EXPECT_EQ(backoff.ceiling(1), milliseconds(100));
  EXPECT_EQ(backoff.ceiling(2), milliseconds(200));
  EXPECT_EQ(backoff.ceiling(3), milliseconds(400));
  EXPECT_EQ(backoff.ceiling(6), milliseconds(3200));
  EXPECT_EQ(backoff.ceiling(7), milliseconds(5000));
  EXPECT_EQ(backoff.ceiling(1000), milliseconds(5000));  // no overflow
  Backoff none(milliseconds(0), milliseconds(0), 1);
  EXPECT_EQ(none.delay(3), milliseconds(0));
}

TEST(S3Backoff, DelaysSpreadOverTheWholeRange) {
  Backoff backoff(milliseconds(100), milliseconds(5000), 42);
  for (int retry = 1; retry <= 8; ++retry) {
    const auto ceiling = backoff.ceiling(retry);
    long long sum = 0;
    long long low = ceiling.count();
    long long high = 0;
    constexpr int kDraws = 2000;
    for (int i = 0; i < kDraws; ++i) {
      const long long d = backoff.delay(retry).count();
      ASSERT_GE(d, 0);
      ASSERT_LE(d, ceiling.count());
      sum += d;
      low = std::min(low, d);
      high = std::max(high, d);
    }
    // Full jitter: uniform over [0, ceiling], so near 0 and near the ceiling
    // both occur and the mean is about half of it (seeded: deterministic).
    EXPECT_LE(low, ceiling.count() / 10) << retry;
    EXPECT_GE(high, ceiling.count() * 9 / 10) << retry;
    const double mean = static_cast<double>(sum) / kDraws;
    EXPECT_NEAR(mean, ceiling.count() / 2.0, ceiling.count() * 0.1) << retry;
  }
}

TEST(S3Backoff, SameSeedSameDelaysOtherSeedOthers) {
  Backoff a(milliseconds(100), milliseconds(5000), 7), b(milliseconds(100), milliseconds(5000), 7),
      c(milliseconds(100), milliseconds(5000), 8);
  std::vector<long long> da, db, dc;
  for (int retry = 1; retry <= 20; ++retry) {
    da.push_back(a.delay(retry).count());
    db.push_back(b.delay(retry).count());
    dc.push_back(c.delay(retry).count());
  }
  EXPECT_EQ(da, db);
  EXPECT_NE(da, dc);
}

TEST(S3Backoff, RetriesServerSideAndThrottlingAnswersOnly) {
  EXPECT_TRUE(retryable_status(500, "InternalError"));
  EXPECT_TRUE(retryable_status(503, "SlowDown"));
  EXPECT_TRUE(retryable_status(502, ""));
  EXPECT_TRUE(retryable_status(504, ""));
  EXPECT_TRUE(retryable_status(429, ""));
  EXPECT_TRUE(retryable_status(400, "RequestTimeout"));
  EXPECT_FALSE(retryable_status(200, ""));
  EXPECT_FALSE(retryable_status(206, ""));
  EXPECT_FALSE(retryable_status(400, "InvalidArgument"));
  EXPECT_FALSE(retryable_status(403, "AccessDenied"));
  EXPECT_FALSE(retryable_status(404, "NoSuchKey"));
  EXPECT_FALSE(retryable_status(301, "PermanentRedirect"));
}

}  // namespace
}  // namespace gpufeed::loader::s3
