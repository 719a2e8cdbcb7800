// How long tune --exec waits for a job's first figure, from what earlier
// trials learned of its reporting (job_pacing.hpp).
#include <gtest/gtest.h>

#include "gpufeed/tune/job_pacing.hpp"

namespace gpufeed::tune {
namespace {

TEST(JobPacing, TheFirstTrialWaitsUpToTheFirstFigureCap) {
  const JobPacing p;
  EXPECT_DOUBLE_EQ(p.startup_cap_s(20, 300), 300);
  EXPECT_DOUBLE_EQ(p.startup_cap_s(400, 300), 400) << "never under the round's cap";
}

TEST(JobPacing, AJobThatPrintsOnlyAtItsEndIsWaitedForOneAndAHalfRuns) {
  JobPacing p;
  p.learn(16.0, {}, true, 16.5);
  EXPECT_TRUE(p.ends_by_itself);
  EXPECT_DOUBLE_EQ(p.run_s, 16.5);
  EXPECT_DOUBLE_EQ(p.startup_cap_s(10, 300), 1.5 * 16.5);
  p.learn(12.0, {}, true, 12.5);
  EXPECT_DOUBLE_EQ(p.run_s, 16.5) << "the longest run seen";
}

TEST(JobPacing, APeriodicReporterIsWaitedForTwiceItsStartUpAndItsIntervalIsTheMedianGap) {
  JobPacing p;
  p.learn(4.0, {2.0, 1.0, 9.0}, false, 30);
  EXPECT_FALSE(p.ends_by_itself);
  EXPECT_DOUBLE_EQ(p.interval_s, 2.0);
  EXPECT_DOUBLE_EQ(p.startup_cap_s(5, 300), 8.0);
  EXPECT_DOUBLE_EQ(p.startup_cap_s(20, 300), 20.0) << "at least the round's cap";
  p.learn(6.0, {3.0}, false, 30);
  EXPECT_DOUBLE_EQ(p.startup_s, 6.0) << "the longest start-up";
  EXPECT_DOUBLE_EQ(p.startup_cap_s(5, 10), 10.0) << "never past the first-figure cap";
}

TEST(JobPacing, OneFigureFromAJobThatWasStoppedIsNoEndOfRun) {
  JobPacing p;
  p.learn(5.0, {}, false, 30);
  EXPECT_FALSE(p.ends_by_itself) << "stopped at its time: it did not end by itself";
  EXPECT_DOUBLE_EQ(p.startup_cap_s(5, 300), 10.0);
}

}  // namespace
}  // namespace gpufeed::tune
