// The sliding evidence window: deltas over the last window, bounded
// whatever the run's length.
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

}  // namespace
}  // namespace gpufeed
