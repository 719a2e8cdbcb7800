// The exported metric families: data wait, totals, GPU figures, findings.
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

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(MonitorMetrics, DataWaitPerRankCountsFromEachLoopsFirstWait) {
  Evidence e;
  e.window_s = 10;
  e.ranks = 2;
  e.waits = {{2, 1000, 1, 0, GF_NR_poll}, {4, 3000, 1, 0, GF_NR_poll}, {1, 500, 2, 1, GF_NR_poll}};
  const auto r = data_wait_by_rank(e);
  ASSERT_EQ(r.size(), 2U);
  EXPECT_NEAR(r.at(0), 4.0 / 8.0, 1e-9);
  EXPECT_NEAR(r.at(1), 0.5 / 9.0, 1e-9);
}

TEST(MonitorMetrics, TotalsKeepExitedWorkersCpuAndSlowCallsByMount) {
  MonitorTotals t;
  t.worker_cpu(5, 0, 1.5);
  t.worker_cpu(5, 0, 2.0);
  t.worker_gone(5);
  t.worker_cpu(6, 0, 0.5);
  EXPECT_NEAR(t.worker_cpu_s().at(0), 2.5, 1e-12);
  EXPECT_EQ(t.live_workers_held(), 1U);
  t.add_slow_call(SlowCall{0, 40, 5, 5, 0, Role::Worker, GF_NR_newfstatat, CallKind::Path, 0, "/m/a", "/m", "fuse"});
  t.add_slow_call(SlowCall{0, 3, 5, 5, 0, Role::Worker, GF_NR_openat, CallKind::Path, 0, "/m/a", "/m", "fuse"});
  const auto& s = t.slow_calls().at({"/m", "stat"});
  EXPECT_EQ(s.count, 1U);
  EXPECT_EQ(s.buckets.front(), 0U);  // 40 ms > 1 ms
  EXPECT_EQ(s.buckets.back(), 1U);
  EXPECT_EQ(t.slow_calls().at({"/m", "open"}).count, 1U);
}

TEST(MonitorMetrics, ExportsTheWindowWithLabelsAndEveryFindingId) {
  Evidence e;
  e.window_s = 10;
  e.ebpf = true;
  e.waits = {{0, 5000, 1, 0, GF_NR_poll}};
  for (int i = 0; i < 9; ++i) {
    e.slow_calls.push_back(SlowCall{1.0 * i, 40.0 + i, 5, 5, 0, Role::Worker, GF_NR_newfstatat, CallKind::Path, 0, "/m/a", "/m", "fuse"});
  }
  MonitorTotals totals;
  std::map<std::string, ActiveFinding> active;
  active["loop.starved"] = ActiveFinding{finding("loop.starved"), 0, 0};
  std::vector<SyscallStat> cumulative{loop_poll(5)};
  MonitorView v;
  v.window = &e;
  v.window_s = 10;
  v.totals = &totals;
  v.active = &active;
  v.cumulative = &cumulative;
  v.worker_states[0]['S'] = 2;
  const std::string text = prom::exposition(monitor_families(v, MonitorLabels{"train", "node1"}));
  EXPECT_TRUE(contains(text, "gpufeed_loop_data_wait_ratio{job=\"train\",node=\"node1\",rank=\"0\"} 0.5\n")) << text;
  EXPECT_TRUE(contains(text, "gpufeed_mount_call_p50_seconds{job=\"train\",node=\"node1\",mount=\"/m\",call=\"stat\"} 0.044\n"));
  EXPECT_TRUE(contains(text, "gpufeed_workers{job=\"train\",node=\"node1\",rank=\"0\",state=\"sleeping\"} 2\n"));
  EXPECT_TRUE(contains(text, "gpufeed_finding_active{job=\"train\",node=\"node1\",finding=\"loop.starved\"} 1\n"));
  for (const auto& id : finding_ids()) EXPECT_TRUE(contains(text, "finding=\"" + id + "\"")) << id;
  EXPECT_TRUE(contains(text, "gpufeed_syscall_duration_seconds_count{job=\"train\",node=\"node1\",role=\"loop\",call=\"poll(pipe)\"} 1\n"))
      << text;
  const Json rec = monitor_record(v, MonitorLabels{"train", "node1"});
  EXPECT_EQ(rec["type"], "sample");
  EXPECT_DOUBLE_EQ(rec["ranks"][0]["data_wait_ratio"].get<double>(), 0.5);
  EXPECT_EQ(rec["ranks"][0]["workers"], 2);
  EXPECT_EQ(rec["findings_active"][0], "loop.starved");
}

TEST(MonitorMetrics, ExportsGpuBusyPowerAndEnergyPerDevice) {
  GpuWindow w("fake", {GpuDevice{0, "NVIDIA", "H200", "0000:41:00.0", {}}}, GpuWindowSettings{10, 100});
  for (int i = 0; i <= 20; ++i) w.add({reading(0.5 * i, 0, 40, 300)});
  Evidence e;
  e.window_s = 10;
  MonitorView v;
  v.window = &e;
  v.window_s = 10;
  v.uptime_s = 10;
  v.gpu = &w;
  const std::string text = prom::exposition(monitor_families(v, MonitorLabels{"train", "n"}));
  EXPECT_TRUE(contains(text, "gpufeed_gpu_busy_ratio{job=\"train\",node=\"n\",gpu=\"0\",bus_id=\"0000:41:00.0\"} 0.4\n"))
      << text;
  EXPECT_TRUE(contains(text, "gpufeed_gpu_power_watts{job=\"train\",node=\"n\",gpu=\"0\",bus_id=\"0000:41:00.0\"} 300\n"));
  EXPECT_TRUE(contains(text, "gpufeed_gpu_energy_joules_total{job=\"train\",node=\"n\",gpu=\"0\",bus_id=\"0000:41:00.0\"} 3000\n"));
  const Json rec = monitor_record(v, MonitorLabels{"train", "n"});
  EXPECT_DOUBLE_EQ(rec["gpus"][0]["busy_ratio"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(rec["gpus"][0]["energy_j_total"].get<double>(), 3000);
}

TEST(MonitorMetrics, SamplesPerJouleAreTheLoopsSamplesOverTheJobsGpuPower) {
  GpuWindow w("fake", {GpuDevice{0, "NVIDIA", "H200", "", {}}, GpuDevice{1, "NVIDIA", "H200", "", {}}},
              GpuWindowSettings{10, 100});
  for (int i = 0; i <= 20; ++i) w.add({reading(0.5 * i, 0, 90, 300), reading(0.5 * i, 1, 0, 100)});
  Evidence e;
  e.window_s = 10;
  e.ranks = 1;
  e.ebpf = true;
  for (int i = 0; i < 60; ++i) e.waits.push_back({0.1 * i, 10, 1, 0, GF_NR_poll});  // a batch each 100 ms
  const LoopStep step = loop_step(e);
  ASSERT_TRUE(step.median_ms);
  const double samples_per_s = step.steps / step.span_s * 32;
  EXPECT_NEAR(samples_per_s, 320, 10) << "ten batches of 32 a second";
  MonitorView v;
  v.window = &e;
  v.uptime_s = 10;
  v.gpu = &w;
  EXPECT_FALSE(samples_per_joule(v)) << "no batch size: no samples";
  v.batch_size = 32;
  ASSERT_TRUE(samples_per_joule(v));
  EXPECT_NEAR(*samples_per_joule(v), samples_per_s / 400, 1e-9) << "the job's GPUs are not known: all of them count";
  v.job_gpus = {0};
  EXPECT_NEAR(*samples_per_joule(v), samples_per_s / 300, 1e-9) << "only the job's GPU";
  const std::string text = prom::exposition(monitor_families(v, MonitorLabels{"train", "n"}));
  EXPECT_TRUE(contains(text, "gpufeed_loop_samples_per_joule{job=\"train\",node=\"n\"} ")) << text;
  EXPECT_NEAR(monitor_record(v, MonitorLabels{"train", "n"})["samples_per_joule"].get<double>(), samples_per_s / 300, 1e-9);
  v.gpu = nullptr;
  EXPECT_FALSE(samples_per_joule(v)) << "no GPU sampler: no joules";
}

}  // namespace
}  // namespace gpufeed
