// The GPU findings, on evidence sampled from the fake GPU sampler.
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

Evidence with_gpu(Evidence e, double busy_ms, double period_ms) {
  FakeGpuSampler gpu(1, duty_cycle(busy_ms, period_ms));
  GpuEvidence g;
  g.backend = "nvml";
  g.sample_hz = 50;
  g.devices = gpu.devices();
  g.samples = sample_for(gpu, 50, 10);
  g.job_devices_from = "all GPUs";
  e.gpu = g;
  e.gpu_measured = true;
  return e;
}

const Finding* find(const std::vector<Finding>& fs, const std::string& id) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.id == id; });
  return it == fs.end() ? nullptr : &*it;
}

TEST(GpuFindings, StarvedGpuWhileTheLoopWaits) {
  auto fs = evaluate_rules(with_gpu(testing::starved_on_fuse(), 250, 1000));
  const Finding* starved = find(fs, "gpu.starved");
  ASSERT_NE(starved, nullptr);
  EXPECT_EQ(starved->severity, Severity::Critical);
  EXPECT_NEAR(starved->figures["gpu_busy_fraction"].get<double>(), 0.25, 0.03);
  const Finding* periodic = find(fs, "gpu.periodic-starvation");
  ASSERT_NE(periodic, nullptr);
  EXPECT_NEAR(periodic->figures["period_ms"].get<double>(), 1000, 60);
  EXPECT_NEAR(periodic->figures["mean_idle_gap_ms"].get<double>(), 750, 40);
  EXPECT_NE(periodic->advice.find("prefetch_factor"), std::string::npos);
  EXPECT_EQ(find(fs, "gpu.bound"), nullptr);
}

TEST(GpuFindings, BusyGpuWithAFedLoopIsGpuBound) {
  Evidence e = with_gpu(testing::healthy_local(), 1000, 1000);  // always busy
  auto fs = evaluate_rules(e);
  ASSERT_EQ(fs.size(), 1U);
  EXPECT_EQ(fs[0].id, "gpu.bound");
  EXPECT_EQ(fs[0].severity, Severity::Info);
  EXPECT_NE(fs[0].advice.find("will not help"), std::string::npos);
}

TEST(GpuFindings, OnlyTheJobsGpusCount) {
  Evidence e = with_gpu(testing::healthy_local(), 1000, 1000);
  e.gpu->job_devices = {7};  // the job runs on another GPU, which was not sampled
  EXPECT_TRUE(evaluate_rules(e).empty());
}

}  // namespace
}  // namespace gpufeed
