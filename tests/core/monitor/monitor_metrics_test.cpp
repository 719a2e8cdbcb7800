// The monitor core: the Prometheus text writer, the sliding evidence window
// (bounded whatever the run's length), the finding start/stop log and the
// exported families.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "syscall_nrs.h"
#include "gpufeed/monitor/evidence_window.hpp"
#include "gpufeed/monitor/finding_log.hpp"
#include "gpufeed/monitor/gpu_window.hpp"
#include "gpufeed/monitor/monitor_metrics.hpp"
#include "gpufeed/monitor/prometheus_text.hpp"

namespace gpufeed {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(PrometheusText, GaugesCountersAndHistogramsInTheTextFormat) {
  prom::Family g{"gpufeed_x_ratio", "A \\ ratio\nover two lines", prom::Type::Gauge, {{{{"rank", "0"}}, 0.25}}, {}};
  prom::Family c{"gpufeed_y_total", "Things", prom::Type::Counter, {{{}, 3}}, {}};
  prom::HistogramSample h{{{"mount", "/data"}}, {0.01, 0.1}, {2, 5}, 0.42, 7};
  prom::Family hist{"gpufeed_z_seconds", "Latency", prom::Type::Histogram, {}, {h}};
  const std::string text = prom::exposition({g, c, hist});
  EXPECT_TRUE(contains(text, "# HELP gpufeed_x_ratio A \\\\ ratio\\nover two lines\n"));
  EXPECT_TRUE(contains(text, "# TYPE gpufeed_x_ratio gauge\ngpufeed_x_ratio{rank=\"0\"} 0.25\n"));
  EXPECT_TRUE(contains(text, "# TYPE gpufeed_y_total counter\ngpufeed_y_total 3\n"));
  EXPECT_TRUE(contains(text, "gpufeed_z_seconds_bucket{mount=\"/data\",le=\"0.01\"} 2\n"));
  EXPECT_TRUE(contains(text, "gpufeed_z_seconds_bucket{mount=\"/data\",le=\"0.1\"} 5\n"));
  EXPECT_TRUE(contains(text, "gpufeed_z_seconds_bucket{mount=\"/data\",le=\"+Inf\"} 7\n"));
  EXPECT_TRUE(contains(text, "gpufeed_z_seconds_sum{mount=\"/data\"} 0.42\ngpufeed_z_seconds_count{mount=\"/data\"} 7\n"));
}

TEST(PrometheusText, LabelValuesAreEscapedAndNamesChecked) {
  EXPECT_EQ(prom::escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_TRUE(prom::valid_metric_name("gpufeed_loop:rate5m"));
  EXPECT_FALSE(prom::valid_metric_name("9lives"));
  EXPECT_FALSE(prom::valid_metric_name("gpufeed-x"));
  EXPECT_FALSE(prom::valid_label_name("__name"));
  EXPECT_FALSE(prom::valid_label_name("a:b"));
  EXPECT_THROW(prom::exposition({prom::Family{"bad name", "", prom::Type::Gauge, {}, {}}}), std::invalid_argument);
  EXPECT_THROW(prom::exposition({prom::Family{"ok", "", prom::Type::Gauge, {{{{"bad-label", "v"}}, 1}}, {}}}),
               std::invalid_argument);
}

TEST(PrometheusText, ValuesRoundTripAndSpecialsAreSpelledAsTheFormatSays) {
  EXPECT_EQ(prom::format_value(0.1), "0.1");
  EXPECT_EQ(prom::format_value(1e21), "1e+21");
  EXPECT_EQ(prom::format_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(prom::format_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(prom::format_value(std::nan("")), "NaN");
  EXPECT_DOUBLE_EQ(std::stod(prom::format_value(1.0 / 3)), 1.0 / 3);
}

SyscallStat loop_poll(double waited_s, std::uint64_t calls = 1) {
  SyscallStat s;
  s.nr = GF_NR_poll;
  s.role = Role::Loop;
  s.kind = CallKind::Pipe;
  s.hist.count = calls;
  s.hist.total_ns = static_cast<std::uint64_t>(waited_s * 1e9);
  return s;
}

WindowTick tick_at(double t, double loop_waited_s, std::uint64_t worker_ticks) {
  WindowTick w;
  w.t_s = t;
  w.syscalls = {loop_poll(loop_waited_s, static_cast<std::uint64_t>(t * 10) + 1)};
  ProcStat st;
  CpuTimes c;
  c.cpu = 0;
  c.user = static_cast<std::uint64_t>(t * 50);  // half busy
  c.idle = static_cast<std::uint64_t>(t * 50);
  st.cpus = {c};
  st.ctxt = static_cast<std::uint64_t>(t * 1000);
  w.stat = st;
  w.psi_total_us["cpu"] = static_cast<std::uint64_t>(t * 0.2e6);  // 20% of the time
  w.processes[10] = {0, 'S', 1 << 20};
  w.processes[11] = {worker_ticks, 'R', 1 << 20};
  return w;
}

WindowHost one_rank() { return WindowHost{1, true, "", 1.0, 1, {0}}; }

TEST(EvidenceWindow, ReportsTheLastWindowAsDeltas) {
  EvidenceWindow w(WindowSettings{10, 11, 1000, 100});
  w.track(10, 1, 0, false, "python3", 0, false);
  w.track(11, 10, 0, true, "pt_data_worker", 0, true);
  // The loop waits 0.6 s of every second; the worker runs 0.5 s of every second.
  for (int t = 0; t <= 40; ++t) w.add_tick(tick_at(t, 0.6 * t, static_cast<std::uint64_t>(50 * t)));
  const Evidence e = w.evidence(one_rank());
  EXPECT_NEAR(e.window_s, 10, 1e-9);
  ASSERT_EQ(e.syscalls.size(), 1U);
  EXPECT_NEAR(static_cast<double>(e.syscalls[0].hist.total_ns) / 1e9, 6.0, 1e-6) << "waited in the window only";
  ASSERT_EQ(e.processes.size(), 2U);
  const ProcessInfo& worker = e.processes[1];
  EXPECT_TRUE(worker.worker);
  EXPECT_NEAR(worker.cpu_s, 5.0, 1e-9);
  EXPECT_DOUBLE_EQ(worker.first_seen_s, 0);
  EXPECT_DOUBLE_EQ(worker.last_seen_s, 10);
  EXPECT_NEAR(e.host.cpu_busy_pct, 50, 1e-6);
  EXPECT_NEAR(e.host.ctx_switches_per_s, 1000, 1e-6);
  ASSERT_TRUE(e.host.psi_cpu_some_pct);
  EXPECT_NEAR(*e.host.psi_cpu_some_pct, 20, 1e-6);
}

TEST(EvidenceWindow, StaysBoundedOverEndlessTicksEventsAndWorkerGenerations) {
  EvidenceWindow w(WindowSettings{5, 6, 50, 100});
  w.track(10, 1, 0, false, "python3", 0, false);
  int pid = 100;
  for (int i = 0; i <= 100000; ++i) {
    const double t = i * 0.01;
    if (i % 100 == 0) {  // a new generation of workers every second
      if (pid > 100) w.exited(pid, t);
      w.track(++pid, 10, 0, true, "pt_data_worker", t, true);
    }
    w.add_slow_call(SlowCall{t, 5, pid, pid, 0, Role::Worker, GF_NR_newfstatat, CallKind::Path, 0, "/d/x", "/d", "fuse"});
    w.add_wait(WaitSpan{t, 3, 10, 0, GF_NR_poll});
    WindowTick tick = tick_at(t, 0.003 * i, 0);
    tick.processes[pid] = {static_cast<std::uint64_t>(i % 100), 'R', 0};
    w.add_tick(std::move(tick));
  }
  EXPECT_LE(w.ticks_held(), 6U);
  EXPECT_LE(w.events_held(), 100U);
  EXPECT_GT(w.events_dropped(), 0U);
  EXPECT_LE(w.processes_held(), 8U) << "workers that left the window are forgotten";
  const Evidence e = w.evidence(one_rank());
  EXPECT_NEAR(e.window_s, 5, 1.01);
  for (const auto& c : e.slow_calls) EXPECT_GE(c.t_s, 0);
}

TEST(EvidenceWindow, AWorkerBornInTheWindowCountsAllItsCpu) {
  EvidenceWindow w(WindowSettings{30, 31, 100, 100});
  w.track(10, 1, 0, false, "python3", 0, false);
  w.add_tick(tick_at(0, 0, 0));
  w.track(12, 10, 0, true, "pt_data_worker", 0.5, true);
  WindowTick t1 = tick_at(1, 0.5, 0);
  t1.processes[12] = {30, 'R', 0};
  w.add_tick(std::move(t1));
  const Evidence e = w.evidence(one_rank());
  for (const auto& p : e.processes) {
    if (p.pid == 12) {
      EXPECT_NEAR(p.cpu_s, 0.3, 1e-9);
    }
  }
}

Finding finding(const std::string& id, Severity s = Severity::Warning) {
  Finding f;
  f.id = id;
  f.severity = s;
  f.title = id + " title";
  f.advice = "do this";
  return f;
}

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

GpuSample reading(double t, int device, double busy, double power) {
  GpuSample s;
  s.t_s = t;
  s.device = device;
  s.busy_pct = busy;
  s.power_w = power;
  return s;
}

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
