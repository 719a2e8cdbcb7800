// The GPU window: bounded, with energy integrated since attach.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "syscall_nrs.h"
#include "gpufeed/monitor/evidence_window.hpp"
#include "gpufeed/monitor/finding_log.hpp"
#include "gpufeed/monitor/gpu_window.hpp"
#include "gpufeed/monitor/monitor_metrics.hpp"
#include "gpufeed/monitor/prometheus_text.hpp"
#include "core/monitor/monitor_test_values.hpp"

namespace gpufeed {
namespace {

using testing::finding;
using testing::loop_poll;
using testing::reading;

TEST(GpuWindow, KeepsTheWindowBoundedAndIntegratesEnergySinceAttach) {
  GpuWindow w("fake", {GpuDevice{0, "NVIDIA", "H200", "0000:41:00.0", {}}}, GpuWindowSettings{10, 50});
  for (int i = 0; i <= 1000; ++i) w.add({reading(0.1 * i, 0, i % 2 ? 100 : 0, 200)});
  EXPECT_LE(w.samples_held(), 50U) << "the ring is capped";
  EXPECT_NEAR(w.totals().at(0).energy_j, 200.0 * 100, 1e-6) << "200 W for 100 s";
  const GpuEvidence g = w.evidence(100, {0}, "GPU process list");
  ASSERT_FALSE(g.samples.empty());
  EXPECT_GE(g.samples.front().t_s, 0);
  EXPECT_LE(g.samples.back().t_s, 10.0 + 1e-9) << "re-timed from the window's start";
  const auto a = w.activity(100).at(0).activity;
  ASSERT_TRUE(a.busy_fraction);
  EXPECT_NEAR(*a.busy_fraction, 0.5, 0.03);
  ASSERT_TRUE(a.mean_power_w);
  EXPECT_DOUBLE_EQ(*a.mean_power_w, 200);
}

TEST(GpuWindow, SamplesOlderThanTheWindowLeaveAndRepeatedBufferedOnesAreDropped) {
  GpuWindow w("fake", {GpuDevice{0, "NVIDIA", "", "", {}}}, GpuWindowSettings{5, 4096});
  for (int i = 0; i < 100; ++i) w.add({reading(i, 0, 50, 100)});
  EXPECT_EQ(w.samples_held(), 6U) << "t = 94..99 are inside 5 s";
  w.add_buffered({reading(98.5, 0, 10, 0), reading(99.0, 0, 20, 0)});
  w.add_buffered({reading(99.0, 0, 20, 0)});
  EXPECT_EQ(w.evidence(99, {}, "").buffered.size(), 2U);
}

}  // namespace
}  // namespace gpufeed
