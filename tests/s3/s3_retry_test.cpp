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
  struct Answer {
    int status;
    const char* code;
    bool retried;
  };
  for (const Answer& a : std::initializer_list<Answer>{
           {500, "InternalError", true}, {503, "SlowDown", true}, {502, "", true}, {504, "", true},
           {429, "", true}, {400, "RequestTimeout", true}, {200, "", false}, {206, "", false},
           {400, "InvalidArgument", false}, {403, "AccessDenied", false}, {404, "NoSuchKey", false},
           {301, "PermanentRedirect", false}}) {
    EXPECT_EQ(retryable_status(a.status, a.code), a.retried) << a.status << " " << a.code;
  }
}

}  // namespace
}  // namespace gpufeed::loader::s3
