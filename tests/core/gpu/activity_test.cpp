// GPU activity analysis (busy fraction, gaps, energy, visible devices).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/diagnose/diagnose_scenarios.hpp"
#include "gpufeed/diagnose/findings.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/gpu/activity.hpp"
#include "gpufeed/gpu/trace.hpp"
#include "support/fake_gpu.hpp"

namespace gpufeed {
namespace {

using testing::duty_cycle;
using testing::FakeGpuSampler;
using testing::sample_for;

TEST(GpuActivity, DutyCycleGivesBusyFractionGapsAndPeriod) {
  // Busy 300 ms of every 1000 ms, sampled at 50 Hz for 20 s.
  FakeGpuSampler gpu(1, duty_cycle(300, 1000));
  auto a = analyse_gpu(sample_for(gpu, 50, 20));
  ASSERT_TRUE(a.busy_fraction);
  EXPECT_NEAR(*a.busy_fraction, 0.30, 0.02);
  ASSERT_TRUE(a.period_s);
  EXPECT_NEAR(*a.period_s, 1.0, 0.05);
  EXPECT_GT(*a.period_strength, 0.8);
  ASSERT_TRUE(a.mean_idle_gap_s);
  EXPECT_NEAR(*a.mean_idle_gap_s, 0.70, 0.03);
  EXPECT_GE(a.idle_gaps_s.size(), 18U);
  ASSERT_FALSE(a.gap_histogram.empty());
  EXPECT_EQ(a.gap_histogram.front().from_ms, 512);  // 700 ms falls in [512, 1024)
}

TEST(GpuActivity, SteadyBusyHasNoPeriodAndNoGaps) {
  FakeGpuSampler gpu(1, [](double) { return 97.0; });
  auto a = analyse_gpu(sample_for(gpu, 10, 10));
  EXPECT_NEAR(*a.busy_fraction, 0.97, 1e-9);
  EXPECT_FALSE(a.period_s);
  EXPECT_TRUE(a.idle_gaps_s.empty());
}

TEST(GpuActivity, EnergyIntegratesPowerAndSkipsMissingReadings) {
  FakeGpuSampler gpu(1, [](double) { return 100.0; });  // 600 W constant
  gpu.fail_power_every = 5;
  auto a = analyse_gpu(sample_for(gpu, 10, 10));
  ASSERT_TRUE(a.mean_power_w);
  EXPECT_NEAR(*a.mean_power_w, 600, 1e-6);
  EXPECT_GT(*a.energy_j, 0);
  EXPECT_NEAR(*samples_per_joule(a, 1200), 2.0, 1e-9);
  EXPECT_FALSE(samples_per_joule(GpuActivity{}, 100));
}

TEST(GpuActivity, VisibleDevices) {
  EXPECT_EQ(parse_visible_devices("0,2"), (std::vector<int>{0, 2}));
  EXPECT_EQ(parse_visible_devices(""), std::vector<int>{});
  EXPECT_FALSE(parse_visible_devices("GPU-8d3c1c2e-aaaa"));
}

}  // namespace
}  // namespace gpufeed
