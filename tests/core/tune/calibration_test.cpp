// The model calibrated by other configs' trials (calibration.hpp): factors
// recovered from trials that a known slower "target" would produce.
#include <gtest/gtest.h>

#include <chrono>

#include "gpufeed/tune/calibration.hpp"

namespace gpufeed::tune {
namespace {

// 8 samples a batch, 10 ms per fetch, a 20 ms step: the step needs 400/s,
// a worker supplies 100/s.
Workload incident_like() {
  Workload w;
  w.storage.levels.push_back({1, Distribution::constant(10.0)});
  w.batch_size = 8;
  w.step_ms = Distribution::constant(20.0);
  return w;
}

Trial trial(int workers, int prefetch, double rate, int round = 2) {
  Trial t;
  t.candidate = {workers, prefetch, true};
  t.samples_per_s = rate;
  t.round = round;
  return t;
}

// The trials a target 2x slower per sample with a 25% longer step gives.
std::vector<Trial> trials_of_slower_target(const std::vector<Candidate>& cs) {
  const Workload truth = calibrated(incident_like(), 2.0, 1.25);
  SimOptions o;
  o.steps = 150;
  std::vector<Trial> out;
  for (const auto& c : cs) out.push_back(trial(c.workers, c.prefetch_factor, simulate(truth, {1, 64}, c, o).samples_per_s));
  return out;
}

TEST(Calibration, RecoversBothFactorsFromSupplyAndDemandLimitedTrials) {
  const std::vector<Candidate> tried = {{2, 2, true}, {4, 2, true}, {12, 2, true}, {16, 2, true}, {8, 4, true}};
  const Candidate chosen{8, 4, true};
  SimOptions o;
  o.steps = 150;
  const auto c = calibrate(incident_like(), {1, 64}, trials_of_slower_target(tried), chosen, o);
  EXPECT_EQ(c.trials_used, 4) << "the chosen config's own trial is left out";
  EXPECT_EQ(c.full_used, 4);
  EXPECT_TRUE(c.step_fitted) << "12 and 16 workers are step-limited";
  EXPECT_NEAR(c.sample_factor, 2.0, 0.25);
  EXPECT_NEAR(c.step_factor, 1.25, 0.051);
  // 8 workers at 20 ms a sample give 400/s; the 25 ms step wants 320/s.
  EXPECT_NEAR(c.samples_per_s, 320, 320 * 0.05);
  // The raw model would have said 400 (step-bound at 20 ms): off by 25%.
  EXPECT_NEAR(simulate(incident_like(), {1, 64}, chosen, o).samples_per_s, 400, 400 * 0.03);
  EXPECT_NE(c.describe().find("fitted to 4 other configs' trials (4 full, 0 short-round)"), std::string::npos) << c.describe();
}

TEST(Calibration, WithoutOtherTrialsTheRawModelStands) {
  const Candidate chosen{4, 2, true};
  const auto c = calibrate(incident_like(), {1, 64}, {trial(4, 2, 123)}, chosen);
  EXPECT_EQ(c.trials_used, 0);
  EXPECT_DOUBLE_EQ(c.sample_factor, 1);
  EXPECT_DOUBLE_EQ(c.step_factor, 1);
  EXPECT_NEAR(c.samples_per_s, 400, 400 * 0.03);  // 4 workers x 100/s
}

TEST(Calibration, ShortRoundTrialsCountWhereAConfigHadNoFullOne) {
  std::vector<Trial> trials = {trial(2, 2, 100, 1), trial(4, 2, 200, 2), trial(4, 2, 50, 2) /* the chosen */};
  trials.back().candidate = {6, 2, true};
  const auto c = calibrate(incident_like(), {1, 64}, trials, {6, 2, true});
  EXPECT_EQ(c.full_used, 1);
  EXPECT_EQ(c.trials_used, 2);
  EXPECT_NEAR(c.sample_factor, 2.0, 0.25);  // 2 workers gave 100/s, not 200/s
  EXPECT_DOUBLE_EQ(c.step_factor, 1) << "two trials: per sample only";
}

// Without a full trial among the other configs' the factors stay 1: fitted
// to short trials alone, they take --exec's model further from the job
// than the raw model is.
TEST(Calibration, ShortRoundTrialsAloneFitNothing) {
  std::vector<Trial> trials = {trial(2, 2, 100, 1), trial(4, 2, 200, 1), trial(6, 2, 150, 2) /* the chosen */};
  const auto c = calibrate(incident_like(), {1, 64}, trials, {6, 2, true});
  EXPECT_EQ(c.trials_used, 0);
  EXPECT_EQ(c.short_only_left_out, 2);
  EXPECT_DOUBLE_EQ(c.sample_factor, 1);
  EXPECT_DOUBLE_EQ(c.step_factor, 1);
  EXPECT_NEAR(c.samples_per_s, 400, 400 * 0.03);  // the raw model: 6 workers supply 600/s, the step takes 400
  EXPECT_NE(c.describe().find("not fitted: the other configs had short-round trials only (2)"), std::string::npos)
      << c.describe();
}

TEST(Calibration, AConfigWithBothRoundsCountsOnceByItsFullTrial) {
  // 2 workers: a short round said 300/s (noise), the full trial 100/s.
  const std::vector<Trial> trials = {trial(2, 2, 300, 1), trial(2, 2, 100, 2), trial(4, 2, 200, 1)};
  const auto c = calibrate(incident_like(), {1, 64}, trials, {6, 2, true});
  EXPECT_EQ(c.trials_used, 2);
  EXPECT_EQ(c.full_used, 1);
  EXPECT_NEAR(c.sample_factor, 2.0, 0.25);
}

// 1-3 workers at 10 ms a sample (100/s each) all starve the 20 ms step
// (400/s): they say nothing about the step, so it is not fitted, however
// they scatter.
TEST(Calibration, NoStepFactorWithoutATrialTheStepLimits) {
  const std::vector<Trial> trials = {trial(1, 2, 80), trial(2, 2, 150), trial(3, 2, 250)};
  const auto c = calibrate(incident_like(), {1, 64}, trials, {8, 2, true});
  EXPECT_EQ(c.trials_used, 3);
  EXPECT_FALSE(c.step_fitted);
  EXPECT_DOUBLE_EQ(c.step_factor, 1);
  EXPECT_GT(c.sample_factor, 1.1);  // ~25% slower per sample
}

TEST(Calibration, FailedTrialsAreIgnored) {
  std::vector<Trial> trials = {trial(2, 2, 200), trial(4, 2, 0)};
  trials.back().ok = false;
  const auto c = calibrate(incident_like(), {1, 64}, trials, {8, 2, true});
  EXPECT_EQ(c.trials_used, 1);
  EXPECT_NE(c.describe().find("fitted to 1 other config's trial (1 full, 0 short-round)"), std::string::npos)
      << c.describe();
  EXPECT_NEAR(c.sample_factor, 1.0, 0.13);
}

// Local files on 2 cores: 3 ms of decode per sample, a 0.02 ms read, so
// from 3 workers on they want more cores than there are.
Workload decode_bound() {
  Workload w;
  w.storage.levels.push_back({1, Distribution::constant(0.02)});
  w.cpu_ms = Distribution::constant(3.0);
  w.batch_size = 8;
  w.step_ms = Distribution::constant(10.0);
  return w;
}

TEST(Calibration, CrowdingTheCoresIsWorkersTimesTheirShareOnACore) {
  const NodeShape two_cores{1, 2};
  EXPECT_FALSE(crowds_cores(decode_bound(), two_cores, {2, 2, true}));
  EXPECT_TRUE(crowds_cores(decode_bound(), two_cores, {3, 2, true}));
  EXPECT_TRUE(crowds_cores(decode_bound(), {2, 2}, {2, 2, true})) << "two ranks of 2 workers on 2 cores";
  // A slow store: 8 workers each spend 0.5 / 30.5 of their time on a core.
  Workload slow_store = decode_bound();
  slow_store.storage.levels = {{1, Distribution::constant(30.0)}};
  slow_store.cpu_ms = Distribution::constant(0.5);
  EXPECT_FALSE(crowds_cores(slow_store, two_cores, {8, 2, true}));
  Workload no_cpu = decode_bound();
  no_cpu.cpu_ms = {};
  EXPECT_FALSE(crowds_cores(no_cpu, two_cores, {8, 2, true}));
}

// The model's per-sample cost is right within the cores; the configs that
// crowd them run 15% below it (a job's processes losing to the crowding).
// Fitted to all trials the factor would say the chosen 2 workers are
// slower than they are; fitted to its side of the limit, it stays near 1x.
TEST(Calibration, OnlyTheChosenConfigsSideOfTheCoresLimitCounts) {
  const Workload w = decode_bound();
  const NodeShape two_cores{1, 2};
  SimOptions o;
  o.steps = 150;
  std::vector<Trial> trials;
  for (const Candidate c : {Candidate{1, 2, true}, Candidate{1, 8, true}, Candidate{4, 2, true}, Candidate{6, 2, true}}) {
    const double raw = simulate(w, two_cores, c, o).samples_per_s;
    trials.push_back(trial(c.workers, c.prefetch_factor, crowds_cores(w, two_cores, c) ? raw * 0.85 : raw));
  }
  const auto c = calibrate(w, two_cores, trials, {2, 8, true}, o);
  EXPECT_EQ(c.trials_used, 2);
  EXPECT_EQ(c.other_regime_left_out, 2);
  EXPECT_NEAR(c.sample_factor, 1.0, 0.06);
  EXPECT_NE(c.describe().find("2 left out: on the other side of the cores' limit"), std::string::npos) << c.describe();
  // The chosen 6 workers: the two crowding trials fit it, 15% slower.
  const auto crowded = calibrate(w, two_cores, trials, {6, 8, true}, o);
  EXPECT_EQ(crowded.trials_used, 2);
  EXPECT_GT(crowded.sample_factor, 1.1);
  // With no trial on its side, all of them count rather than none.
  const std::vector<Trial> crowding_only = {trials[2], trials[3]};
  const auto fallback = calibrate(w, two_cores, crowding_only, {2, 8, true}, o);
  EXPECT_EQ(fallback.trials_used, 2);
  EXPECT_EQ(fallback.other_regime_left_out, 0);
}

}  // namespace
}  // namespace gpufeed::tune
