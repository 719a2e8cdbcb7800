// The DataLoader model against closed-form cases.
#include <gtest/gtest.h>

#include "gpufeed/tune/dataloader_model.hpp"

namespace gpufeed::tune {
namespace {

Workload fetch_bound(double latency_ms, int batch) {
  Workload w;
  w.storage.levels.push_back({1, Distribution::constant(latency_ms)});
  w.batch_size = batch;
  return w;
}

TEST(Distribution, LognormalQuantilesAndMean) {
  const auto d = Distribution::lognormal(10, 0.5, 2000);
  EXPECT_NEAR(d.quantile(0.5), 10, 0.2);
  EXPECT_NEAR(d.mean(), 10 * std::exp(0.125), 0.2);
  EXPECT_EQ(Distribution::constant(3).mean(), 3);
  std::mt19937_64 rng(1);
  EXPECT_EQ(Distribution::constant(3).draw(rng), 3);
  EXPECT_EQ(Distribution().draw(rng), 0);
}

TEST(StorageModel, PicksTheLevelAtOrAboveTheConcurrency) {
  StorageModel s;
  s.levels = {{1, Distribution::constant(1)}, {4, Distribution::constant(2)}, {16, Distribution::constant(5)}};
  EXPECT_EQ(s.at(1).mean(), 1);
  EXPECT_EQ(s.at(3).mean(), 2);
  EXPECT_EQ(s.at(16).mean(), 5);
  EXPECT_EQ(s.at(100).mean(), 5);
}

TEST(StorageModel, LevelsThatAnswerFasterUnderMoreLoadArePooled) {
  StorageModel s;  // 1: 40 ms; 2: 60; 4: 50 (below 2: noise); 8: 70
  s.levels = {{1, Distribution({40, 40})}, {2, Distribution({60, 60})}, {4, Distribution({50, 50})},
              {8, Distribution({70, 70})}};
  EXPECT_EQ(pool_where_faster_under_load(s), 1);
  EXPECT_EQ(s.at(1).mean(), 40);
  EXPECT_EQ(s.at(2).mean(), 55);  // 60 and 50 pooled, both samples of each
  EXPECT_EQ(s.at(4).mean(), 55);
  EXPECT_EQ(s.at(4).values().size(), 4U);
  EXPECT_EQ(s.at(8).mean(), 70);

  // A fall that undercuts two levels pools all three, weighted by count.
  StorageModel chain;
  chain.levels = {{1, Distribution({50})}, {2, Distribution({60})}, {4, Distribution({20, 20})}};
  EXPECT_EQ(pool_where_faster_under_load(chain), 2);
  EXPECT_EQ(chain.at(1).mean(), 37.5);
  EXPECT_EQ(chain.at(4).mean(), 37.5);

  StorageModel rising;  // already rising: untouched
  rising.levels = {{1, Distribution({10})}, {2, Distribution({10})}, {4, Distribution({30})}};
  EXPECT_EQ(pool_where_faster_under_load(rising), 0);
  EXPECT_EQ(rising.at(4).mean(), 30);
}

// Constant latency t, no CPU, a free step: W workers deliver W / t exactly.
TEST(Simulate, ConstantLatencyIsLittlesLawExactly) {
  for (int workers : {1, 3, 8}) {
    const auto w = fetch_bound(5.0, 16);
    SimOptions o;
    o.steps = 240;  // whole bursts: W batches finish together
    const auto p = simulate(w, {1, 64}, {workers, 2, true}, o);
    EXPECT_NEAR(p.samples_per_s, workers / 0.005, 1e-6 * workers / 0.005) << workers;
    EXPECT_NEAR(p.bound_samples_per_s, workers / 0.005, 1e-9);
    EXPECT_GT(p.starvation, 0.99);
  }
}

TEST(Simulate, CpuBoundWorkIsCappedByTheCores) {
  Workload w;
  w.cpu_ms = Distribution::constant(2.0);
  w.batch_size = 8;
  const auto p = simulate(w, {1, 3}, {8, 2, true});  // 8 workers share 3 cores
  EXPECT_NEAR(p.samples_per_s, 3 / 0.002, 0.01 * 3 / 0.002);
  EXPECT_NEAR(p.bound_samples_per_s, 3 / 0.002, 1e-9);
  const auto fewer = simulate(w, {1, 3}, {2, 2, true});  // fewer workers than cores
  EXPECT_NEAR(fewer.samples_per_s, 2 / 0.002, 0.01 * 2 / 0.002);
}

// Each sample's CPU work slows as more cores are busy (the built-in trials
// measure it, cpu_from_trials.hpp): 1.2x on all 4 cores is 4 / 2.4
// ms = 1667 samples/s where 1 worker alone still makes 500; 2 busy cores
// are a third of the way there (1.0667x): 2 / 2.133 ms = 937.5.
TEST(Simulate, EachSampleSlowsAsMoreCoresAreBusy) {
  Workload w;
  w.cpu_ms = Distribution::constant(2.0);
  w.batch_size = 8;
  w.cpu_slowdown_all_cores = 1.2;
  SimOptions o;
  o.steps = 300;
  EXPECT_NEAR(simulate(w, {1, 4}, {1, 2, true}, o).samples_per_s, 500, 500 * 0.01);
  EXPECT_NEAR(simulate(w, {1, 4}, {2, 2, true}, o).samples_per_s, 937.5, 937.5 * 0.01);
  const auto all = simulate(w, {1, 4}, {8, 2, true});
  EXPECT_NEAR(all.samples_per_s, 1666.7, 1666.7 * 0.01);
  EXPECT_NEAR(all.bound_samples_per_s, 1666.7, 0.1);
  w.cpu_slowdown_all_cores = 1;
  EXPECT_NEAR(simulate(w, {1, 4}, {8, 2, true}).samples_per_s, 2000, 2000 * 0.01);
}

// The loop's own CPU per batch (receiving, unpickling) shares the cores
// with the workers: 8 x 2 ms of worker CPU plus 8 ms of loop CPU per batch
// on 2 cores is 24 ms of CPU a batch, 667 samples/s instead of 1000.
TEST(Simulate, TheLoopsCpuPerBatchSharesTheCores) {
  Workload w;
  w.cpu_ms = Distribution::constant(2.0);
  w.batch_size = 8;
  SimOptions o;
  o.steps = 300;
  const auto without = simulate(w, {1, 2}, {4, 2, true}, o);
  EXPECT_NEAR(without.samples_per_s, 1000, 1000 * 0.02);
  w.loop_cpu_ms = Distribution::constant(8.0);
  const auto with = simulate(w, {1, 2}, {4, 2, true}, o);
  EXPECT_NEAR(with.samples_per_s, 2 / 0.024 * 8, 667 * 0.03);
}

// PyTorch's iterator issues only its epoch's batches. 10 ms a sample, batch
// 4, 4 workers (400/s of supply) and a 20 ms step (200/s): endless, the step
// is the limit; with 10 batches an epoch, each epoch's first batch is built
// only after the last step (40 ms): 10 steps in 240 ms, 166.7/s exactly.
TEST(Simulate, ThePipelineDrainsAtEachEpochsEnd) {
  Workload w = fetch_bound(10, 4);
  w.step_ms = Distribution::constant(20);
  SimOptions o;
  o.steps = 150;
  EXPECT_NEAR(simulate(w, {1, 1}, {4, 2, true}, o).samples_per_s, 200, 1e-6);
  w.batches_per_epoch = 10;
  const auto drained = simulate(w, {1, 1}, {4, 2, true}, o);
  EXPECT_NEAR(drained.samples_per_s, 40 / 0.240, 1e-6);
  EXPECT_NEAR(drained.starvation, 0.040 / 0.240, 1e-6);
  // A window that is no whole number of epochs is rounded up to one.
  o.steps = 145;
  EXPECT_NEAR(simulate(w, {1, 1}, {4, 2, true}, o).samples_per_s, 40 / 0.240, 1e-6);
}

TEST(Simulate, RanksShareTheNodesCores) {
  Workload w;
  w.cpu_ms = Distribution::constant(1.0);
  w.batch_size = 4;
  const auto p = simulate(w, {4, 8}, {4, 2, true});  // 16 workers, 8 cores
  EXPECT_NEAR(p.samples_per_s, 8 / 0.001 / 4, 0.02 * 2000);
  EXPECT_NEAR(p.node_samples_per_s, 8000, 0.02 * 8000);
}

TEST(Simulate, AFastLoaderIsLimitedByTheStep) {
  auto w = fetch_bound(0.1, 32);
  w.step_ms = Distribution::constant(40);
  const auto p = simulate(w, {1, 8}, {8, 2, true});
  EXPECT_NEAR(p.samples_per_s, 32 / 0.040, 0.01 * 800);
  EXPECT_LT(p.starvation, 0.01);
}

// Mean supply matches demand but latency is heavy-tailed: deeper prefetch
// absorbs the bursts, so starvation falls as prefetch_factor rises.
TEST(Simulate, DeeperPrefetchAbsorbsAHeavyTail) {
  Workload w;
  w.storage.levels.push_back({1, Distribution::lognormal(4, 1.2)});
  w.batch_size = 8;
  const double per_sample = w.storage.at(1).mean();
  const int workers = 4;
  // Step time so that mean supply is 10% above demand.
  w.step_ms = Distribution::constant(8 * per_sample / workers * 1.1);
  SimOptions o;
  o.steps = 2000;
  const auto shallow = simulate(w, {1, 64}, {workers, 1, true}, o);
  const auto deep = simulate(w, {1, 64}, {workers, 8, true}, o);
  EXPECT_GT(shallow.starvation, deep.starvation + 0.05);
  EXPECT_GT(deep.samples_per_s, shallow.samples_per_s * 1.05);
}

TEST(Simulate, PinningCostsAMainThreadStage) {
  auto w = fetch_bound(0.01, 8);
  w.batch_bytes = 80e6;     // 80 MB per batch
  w.pin_gb_per_s = 10;      // 8 ms to pin
  const auto p = simulate(w, {1, 64}, {16, 2, true});
  EXPECT_NEAR(p.samples_per_s, 8 / 0.008, 0.01 * 1000);
  EXPECT_NEAR(p.bound_samples_per_s, 1000, 1e-6);
  EXPECT_EQ(p.pinned_bytes, static_cast<std::uint64_t>(16 * 2 * 80e6));
}

TEST(Simulate, TheSimulationNeverBeatsTheBound) {
  Workload w;
  w.storage.levels = {{1, Distribution::lognormal(3, 0.8)}, {8, Distribution::lognormal(5, 0.9)}};
  w.cpu_ms = Distribution::lognormal(1, 0.3);
  w.step_ms = Distribution::constant(20);
  w.batch_size = 16;
  for (int workers : {1, 2, 4, 8}) {
    for (int prefetch : {1, 4}) {
      const auto p = simulate(w, {2, 4}, {workers, prefetch, true});
      EXPECT_LE(p.samples_per_s, p.bound_samples_per_s * 1.02) << workers << "/" << prefetch;
    }
  }
}

}  // namespace
}  // namespace gpufeed::tune
