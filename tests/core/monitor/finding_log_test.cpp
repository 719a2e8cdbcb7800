// The finding start/stop log: once per start and stop, no flapping.
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

TEST(FindingLog, LogsAStartAndAStopOnceAndDoesNotFlap) {
  FindingLog log(3);
  auto c = log.update({finding("loop.starved", Severity::Critical)}, 1);
  ASSERT_EQ(c.size(), 1U);
  EXPECT_TRUE(c[0].started);
  EXPECT_EQ(c[0].id, "loop.starved");
  EXPECT_TRUE(log.update({finding("loop.starved", Severity::Critical)}, 2).empty()) << "still active: nothing logged";
  EXPECT_TRUE(log.update({}, 3).empty()) << "one evaluation without it is not a stop";
  EXPECT_TRUE(log.update({finding("loop.starved", Severity::Critical)}, 4).empty()) << "back: no new start";
  EXPECT_TRUE(log.update({}, 5).empty());
  EXPECT_TRUE(log.update({}, 6).empty());
  c = log.update({}, 7);
  ASSERT_EQ(c.size(), 1U);
  EXPECT_FALSE(c[0].started);
  EXPECT_DOUBLE_EQ(c[0].active_s, 6);
  EXPECT_TRUE(log.active().empty());
}

TEST(FindingLog, InfoFindingsAreNotFollowedAndCloseEndsTheRest) {
  FindingLog log(1);
  auto c = log.update({finding("gpu.bound", Severity::Info), finding("workers.io-bound")}, 1);
  ASSERT_EQ(c.size(), 1U);
  EXPECT_EQ(c[0].id, "workers.io-bound");
  c = log.close(4);
  ASSERT_EQ(c.size(), 1U);
  EXPECT_FALSE(c[0].started);
  EXPECT_DOUBLE_EQ(c[0].active_s, 3);
}

TEST(FindingLog, AStartRecordCarriesTheFiguresAHelperCanActOn) {
  FindingLog log(1);
  Finding f = finding("loader.too-few-workers");
  f.figures = {{"recommended_num_workers", 15}};
  auto c = log.update({f}, 2);
  ASSERT_EQ(c.size(), 1U);
  const MonitorLabels labels{"train", "gpu07"};
  const Json started = finding_record(c[0], labels);
  EXPECT_EQ(started["event"], "started");
  EXPECT_EQ(started["figures"]["recommended_num_workers"], 15) << started.dump();
  const Json stopped = finding_record(log.close(5).at(0), labels);
  EXPECT_EQ(stopped["event"], "stopped");
  EXPECT_FALSE(stopped.contains("figures")) << "a stop has no advice to act on: " << stopped.dump();
}

}  // namespace
}  // namespace gpufeed
