// The per-sample CPU cost refitted from the built-in trials' transform times.
#include <gtest/gtest.h>

#include "gpufeed/tune/cpu_from_trials.hpp"

namespace gpufeed::tune {
namespace {

Trial timed(int workers, double transform_ms, std::uint64_t samples = 1000) {
  Trial t;
  t.candidate = {workers, 2, true};
  t.samples_per_s = 100;
  t.transform_ms = transform_ms;
  t.transform_samples = samples;
  return t;
}

// 2.0 ms a sample with 1 of 4 cores busy, 2.2 with 2 and 2.6 with all 4: a
// line from 2.0 to 2.6, x1.30 with every core busy.
TEST(CpuFromTrials, TheCostAtOneCoreAndItsGrowthToAll) {
  const auto f = cpu_from_trials({timed(1, 2.0), timed(2, 2.2), timed(4, 2.6)}, {1, 4});
  ASSERT_TRUE(f.used) << f.why_not;
  EXPECT_NEAR(f.cpu_ms, 2.0, 1e-9);
  EXPECT_NEAR(f.slowdown, 1.3, 1e-9);
  EXPECT_EQ(f.trials, 3);
  EXPECT_NE(f.describe().find("2.000 ms per sample with 1 core busy, x1.30"), std::string::npos) << f.describe();
}

// More workers than cores wait for a core inside the transform: their
// times say nothing of the CPU work. Failed trials and a job's trials (no
// transform time) count for nothing either.
TEST(CpuFromTrials, OnlyTrialsWithinTheCoresCount) {
  Trial failed = timed(1, 9.0);
  failed.ok = false;
  Trial job = timed(2, 0, 0);
  const auto f = cpu_from_trials({timed(1, 2.0), timed(2, 2.2), timed(8, 8.8), failed, job}, {1, 2});
  ASSERT_TRUE(f.used);
  EXPECT_NEAR(f.cpu_ms, 2.0, 1e-9);
  EXPECT_NEAR(f.slowdown, 1.1, 1e-9);
  EXPECT_EQ(f.trials, 2);
  // All ranks' workers share the node's cores: 2 ranks of 1 worker keep 2
  // of 4 cores busy (2.0 ms), of 2 workers all 4 (2.4 ms): 1.8 ms at one, x4/3.
  const auto ranks = cpu_from_trials({timed(1, 2.0), timed(2, 2.4)}, {2, 4});
  EXPECT_NEAR(ranks.cpu_ms, 1.8, 1e-9);
  EXPECT_NEAR(ranks.slowdown, 4.0 / 3, 1e-9);
}

// Each trial weighs by the samples it timed; one busy-core count alone
// gives its weighted mean and no growth.
TEST(CpuFromTrials, OneCoreCountGivesTheWeightedMean) {
  const auto f = cpu_from_trials({timed(2, 2.0, 3000), timed(2, 3.0, 1000)}, {1, 2});
  ASSERT_TRUE(f.used);
  EXPECT_NEAR(f.cpu_ms, 2.25, 1e-9);
  EXPECT_EQ(f.slowdown, 1);
}

// Faster with more cores busy is noise (a slow spell in the 1-worker
// trial): one figure for all. Growth is capped at x3 and at the core count
// (beyond it, 2 busy cores would do less than 1), keeping the line's mean.
TEST(CpuFromTrials, NoiseDoesNotBendTheLine) {
  const auto faster = cpu_from_trials({timed(1, 2.4), timed(2, 2.0)}, {1, 2});
  EXPECT_NEAR(faster.cpu_ms, 2.2, 1e-9);
  EXPECT_EQ(faster.slowdown, 1);
  const auto steep = cpu_from_trials({timed(1, 1.0), timed(2, 5.0)}, {1, 2});
  EXPECT_EQ(steep.slowdown, 2) << "2 cores";
  EXPECT_NEAR(steep.cpu_ms * (1 + 1 * 0.5), 3.0, 1e-9) << "the line's mean stays at the trials' mean";
  const auto many = cpu_from_trials({timed(1, 1.0), timed(8, 5.0)}, {1, 8});
  EXPECT_EQ(many.slowdown, 3);
  // 2 ranks on 4 cores: no trial has one core busy, and a steep line through
  // 2 and 4 busy cores crosses zero before one; capped, not called noise.
  const auto no_single = cpu_from_trials({timed(1, 1.0), timed(2, 4.0)}, {2, 4});
  EXPECT_EQ(no_single.slowdown, 3);
  EXPECT_GT(no_single.cpu_ms, 0);
}

TEST(CpuFromTrials, NotUsedWithoutTrialsOrCpu) {
  const auto none = cpu_from_trials({timed(4, 2.0)}, {1, 2});
  EXPECT_FALSE(none.used);
  EXPECT_NE(none.why_not.find("within the worker cores"), std::string::npos);
  const auto storage_bound = cpu_from_trials({timed(1, 0.01), timed(2, 0.012)}, {1, 2});
  EXPECT_FALSE(storage_bound.used);
  EXPECT_NE(storage_bound.why_not.find("too little CPU"), std::string::npos);
}

// The refit keeps the measured distribution's shape and sets its mean.
Trial cpu_timed(int workers, double wall_ms, double cpu_ms, std::uint64_t samples = 1000) {
  Trial t = timed(workers, wall_ms, samples);
  t.transform_cpu_ms = cpu_ms;
  return t;
}

// CPU time holds no wait for a core, so trials with more workers than cores
// count, weighted by samples; trials that left a core idle do not (their
// cores ran with less contention than the job's busiest case).
TEST(CpuFromTrials, CpuTimeOfEveryTrialThatKeptAllCoresBusy) {
  const NodeShape node{1, 2};
  const auto f = cpu_time_from_trials(
      {cpu_timed(1, 2.0, 2.0), cpu_timed(2, 3.1, 3.0, 1000), cpu_timed(6, 9.0, 3.3, 3000)}, node);
  ASSERT_TRUE(f.used) << f.why_not;
  EXPECT_NEAR(f.cpu_ms, (3.0 * 1000 + 3.3 * 3000) / 4000, 1e-9);
  EXPECT_EQ(f.trials, 2);
  EXPECT_TRUE(f.all_busy);
  EXPECT_DOUBLE_EQ(f.slowdown, 1.0);
  EXPECT_NE(f.describe().find("3.225 ms of CPU per sample with all worker cores busy (2 trials)"), std::string::npos)
      << f.describe();
  EXPECT_DOUBLE_EQ(with_cpu_from_trials(Workload{}, f).cpu_slowdown_all_cores, 1.0);
}

TEST(CpuFromTrials, CpuTimeNotUsedWithoutItOrWithoutABusyTrial) {
  const NodeShape node{1, 2};
  EXPECT_FALSE(cpu_time_from_trials({timed(2, 3.0), timed(4, 6.0)}, node).used) << "wall times only";
  EXPECT_FALSE(cpu_time_from_trials({cpu_timed(1, 3.0, 3.0)}, node).used) << "a core left idle";
  auto failed = cpu_timed(2, 3.0, 3.0);
  failed.ok = false;
  EXPECT_FALSE(cpu_time_from_trials({failed}, node).used);
  const auto tiny = cpu_time_from_trials({cpu_timed(2, 0.01, 0.01)}, node);
  EXPECT_FALSE(tiny.used);
  EXPECT_NE(tiny.why_not.find("too little"), std::string::npos) << tiny.why_not;
  EXPECT_TRUE(cpu_time_from_trials({cpu_timed(1, 3.0, 3.0)}, NodeShape{2, 2}).used) << "two ranks of one worker";
}

TEST(CpuFromTrials, TheWorkloadKeepsItsShape) {
  Workload w;
  w.cpu_ms = Distribution({1.0, 2.0, 3.0});
  CpuFromTrials f;
  f.used = true;
  f.cpu_ms = 4.0;
  f.slowdown = 1.25;
  const auto out = with_cpu_from_trials(w, f);
  EXPECT_NEAR(out.cpu_ms.mean(), 4.0, 1e-9);
  EXPECT_NEAR(out.cpu_ms.quantile(0), 2.0, 1e-9);
  EXPECT_NEAR(out.cpu_ms.quantile(1), 6.0, 1e-9);
  EXPECT_EQ(out.cpu_slowdown_all_cores, 1.25);
  f.used = false;
  EXPECT_EQ(with_cpu_from_trials(w, f).cpu_ms.mean(), 2.0);
}

}  // namespace
}  // namespace gpufeed::tune
