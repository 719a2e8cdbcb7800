// GPU analysis, traces, the replay sampler, the sampling thread and the GPU
// findings, on the fake sampler.
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

TEST(GpuTrace, RoundTripsThroughTheFileFormat) {
  FakeGpuSampler gpu(2, duty_cycle(300, 1000));
  gpu.fail_power_every = 3;
  GpuTrace trace{"fake", 10, gpu.devices(), sample_for(gpu, 10, 2), {}};
  trace.buffered.push_back({0.05, 0, 42.0, std::nullopt, std::nullopt, std::nullopt});
  HostInfo host{"node", "6.1", "cpu", 8, {}, false};
  const std::string text = write_gpu_trace(trace, host, std::chrono::system_clock::now());
  GpuTrace back = read_gpu_trace(text, "t.gputrace");
  EXPECT_EQ(back.backend, "fake");
  ASSERT_EQ(back.devices.size(), 2U);
  EXPECT_EQ(back.devices[1].bus_id, "0000:41:00.0");
  ASSERT_EQ(back.samples.size(), trace.samples.size());
  EXPECT_EQ(back.samples[3].busy_pct, trace.samples[3].busy_pct);
  EXPECT_EQ(back.samples[4].power_w.has_value(), trace.samples[4].power_w.has_value());  // failed readings stay empty
  ASSERT_EQ(back.buffered.size(), 1U);
  EXPECT_DOUBLE_EQ(*back.buffered[0].busy_pct, 42.0);
}

TEST(GpuTrace, BadFilesAreUsageErrorsNamingFileAndLine) {
  for (const char* text : {"", "not json\n", "{\"schema\":\"gpufeed.probe/v1\"}\n",
                           "{\"schema\":\"gpufeed.gputrace/v1\",\"backend\":\"nvml\",\"sample_hz\":10,\"devices\":[]}\n{\"d\":0}\n"}) {
    try {
      read_gpu_trace(text, "x.gputrace");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Usage);
      EXPECT_NE(std::string(e.what()).find("x.gputrace"), std::string::npos);
    }
  }
}

TEST(GpuTrace, ReplayHandsOutRecordedSamplesInTime) {
  FakeGpuSampler gpu(1, duty_cycle(300, 1000));
  ReplaySampler replay(GpuTrace{"fake", 10, gpu.devices(), sample_for(gpu, 10, 3), {}});
  EXPECT_EQ(replay.backend(), "replay");
  EXPECT_EQ(replay.sample(0.95).size(), 10U);  // t = 0.0 .. 0.9
  EXPECT_EQ(replay.sample(1.95).size(), 10U);
  EXPECT_EQ(replay.sample(100).size(), 10U);
  EXPECT_TRUE(replay.sample(200).empty());
}

TEST(GpuSamplingThread, SamplesAtItsRateUntilStopped) {
  FakeGpuSampler gpu(2, [](double) { return 50.0; });
  const auto start = std::chrono::steady_clock::now();
  GpuSamplingThread thread(gpu, 50, [start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  thread.stop();
  const GpuTrace t = thread.trace();
  EXPECT_EQ(t.backend, "fake");
  EXPECT_EQ(t.devices.size(), 2U);
  const size_t per_device = t.samples.size() / 2;
  EXPECT_GE(per_device, 10U);  // ~20 expected; lenient for a loaded machine
  EXPECT_LE(per_device, 25U);
  EXPECT_TRUE(std::is_sorted(t.samples.begin(), t.samples.end(),
                             [](const GpuSample& a, const GpuSample& b) { return a.t_s < b.t_s; }));
}

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
