// GPU traces, the replay sampler and the sampling thread, on the fake sampler.
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

// No fixed sleep: the test waits for the samples it needs, and checks the
// rate as a bound the thread cannot pass however loaded the machine is (the
// k-th round of samples is never taken before k periods have passed).
TEST(GpuSamplingThread, SamplesAtMostAtItsRateUntilStopped) {
  FakeGpuSampler gpu(2, [](double) { return 50.0; });
  const auto start = std::chrono::steady_clock::now();
  const auto seconds_since_start = [start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  constexpr double kHz = 50;
  GpuSamplingThread thread(gpu, kHz, seconds_since_start);
  while (thread.trace().samples.size() < 2 * 10 && seconds_since_start() < 30) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  thread.stop();
  const double stopped_at_s = seconds_since_start();
  const GpuTrace t = thread.trace();
  EXPECT_EQ(t.backend, "fake");
  EXPECT_EQ(t.devices.size(), 2U);
  const size_t per_device = t.samples.size() / 2;
  EXPECT_GE(per_device, 10U) << "the thread took too few samples in 30 s";
  EXPECT_LE(per_device, static_cast<size_t>(stopped_at_s * kHz) + 1) << "faster than " << kHz << " Hz";
  EXPECT_TRUE(std::is_sorted(t.samples.begin(), t.samples.end(),
                             [](const GpuSample& a, const GpuSample& b) { return a.t_s < b.t_s; }));
}

}  // namespace
}  // namespace gpufeed
