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
  EXPECT_DOUBLE_EQ(p.startup_cap_s(40, 300), 60) << "a trial asked for what fits the cap has half the cap more";
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

// A job that reports at its end, asked for 42 batches of 256, printed 80
// samples/s 150 s in: its 41 counted batches took 131.2 s, so 18.8 s went
// before them.
TEST(JobPacing, AnEndOfRunFigureGivesTheJobsLeadAndRate) {
  JobPacing p;
  p.learn(150, {}, true, 151);
  p.learn_run(80, 42, 256, 150);
  EXPECT_DOUBLE_EQ(p.rate_seen, 80);
  EXPECT_NEAR(p.lead_s, 150 - 41 * 256 / 80.0, 1e-9);
  p.learn_run(60, 10, 256, 40);
  EXPECT_DOUBLE_EQ(p.rate_seen, 80) << "the highest rate";
  EXPECT_NEAR(p.lead_s, 150 - 41 * 256 / 80.0, 1e-9) << "the longest lead";
  p.learn_run(0, 10, 256, 40);
  p.learn_run(50, 1, 256, 40);
  EXPECT_DOUBLE_EQ(p.rate_seen, 80) << "a figure of 0, or of one batch, teaches nothing";
}

TEST(JobPacing, AllTheWarmUpIsAskedForWhileTheRunFitsTheCap) {
  JobPacing p;
  EXPECT_EQ(p.batches_to_ask(32, 8, 20, 256, 40), 52u) << "nothing learnt yet";
  p.learn(5, {}, true, 6);
  p.learn_run(1000, 40, 16, 5);
  EXPECT_EQ(p.batches_to_ask(32, 8, 20, 16, 40), 52u) << "52 batches of 16 at 1000 samples/s: under a second";
}

TEST(JobPacing, TheWarmUpIsCutFirstWhenTheRunWouldNotFitTheCap) {
  JobPacing p;
  p.learn(100, {}, true, 101);
  p.learn_run(80, 28, 256, 100);  // lead 100 - 27 x 3.2 = 13.6 s
  // 40 s cap: 1 + (40 - 13.6) x 80 / 256 = 9.25 batches fit, fewer than
  // the first wave (8) and the 20 steps: those are the least asked.
  EXPECT_EQ(p.batches_to_ask(32, 8, 20, 256, 40), 28u);
  // 120 s cap: 34.25 fit, between the least (8 + 20) and all (32 + 20).
  EXPECT_EQ(p.batches_to_ask(32, 8, 20, 256, 120), 34u);
  EXPECT_EQ(p.batches_to_ask(32, 8, 20, 256, 1000), 52u) << "all of them fit";
  EXPECT_EQ(p.batches_to_ask(2, 2, 20, 256, 1), 22u) << "the first wave is the whole warm-up";
}

TEST(JobPacing, AJobThatRunsOnGetsEveryBatch) {
  JobPacing p;
  p.learn(4.0, {2.0, 2.0}, false, 30);
  p.learn_run(80, 28, 256, 100);
  EXPECT_EQ(p.batches_to_ask(32, 8, 20, 256, 40), 52u) << "the trial stops a periodic reporter at its time";
}

// Before any figure the model's rate sizes the trial, its lead taken as 0;
// once a trial has shown the job's own rate, that rate does, and once a
// trial has shown a periodic reporter, nothing is cut.
TEST(JobPacing, TheFirstTrialIsSizedByTheModelsRate) {
  JobPacing p;
  // 128 workers, prefetch 8, batch 16: 1024 warm-up batches. At the model's
  // 55 samples/s, 1 + 40 x 55 / 16 = 138.5 fit the 40 s cap, under the
  // first wave (128) and the 20 steps: those are the least asked.
  EXPECT_EQ(p.batches_to_ask(1024, 128, 20, 16, 40, 55), 148u);
  // 300 s: 1 + 300 x 55 / 16 = 1032.25 fit, between the least and all.
  EXPECT_EQ(p.batches_to_ask(1024, 128, 20, 16, 300, 55), 1032u);
  EXPECT_EQ(p.batches_to_ask(1024, 128, 20, 16, 40), 1044u) << "no model, no rate: every batch";
  EXPECT_DOUBLE_EQ(p.sizing_rate(55), 55);

  p.learn(30, {}, true, 31);
  p.learn_run(40, 148, 16, 30);
  EXPECT_DOUBLE_EQ(p.sizing_rate(55), 40) << "the job's own rate, once seen, not the model's";

  JobPacing periodic;
  periodic.learn(4.0, {2.0, 2.0}, false, 30);
  EXPECT_EQ(periodic.batches_to_ask(1024, 128, 20, 16, 40, 55), 1044u) << "a periodic reporter is stopped at its time";
  EXPECT_DOUBLE_EQ(periodic.sizing_rate(55), 0);
}

}  // namespace
}  // namespace gpufeed::tune
