// The /proc parsers of the diagnose core.
#include <gtest/gtest.h>

#include "syscall_nrs.h"
#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/diagnose/histogram.hpp"
#include "gpufeed/diagnose/mounts.hpp"
#include "gpufeed/diagnose/proc_stats.hpp"
#include "gpufeed/diagnose/syscalls.hpp"

namespace gpufeed {
namespace {

TEST(ProcStats, ProcStatAndCpuUse) {
  const char* a = "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 50 0 50 400 0 0 0 0 0 0\ncpu1 50 0 50 400 0 0 0 0 0 0\nctxt 1000\n";
  const char* b = "cpu  300 0 100 900 100 0 0 0 0 0\ncpu0 150 0 50 400 0 0 0 0 0 0\ncpu1 150 0 50 500 100 0 0 0 0 0\nctxt 3000\n";
  auto before = parse_proc_stat(a), after = parse_proc_stat(b);
  ASSERT_EQ(after.cpus.size(), 2U);
  EXPECT_EQ(after.ctxt, 3000U);
  auto both = cpu_use(before, after, {0, 1});
  EXPECT_DOUBLE_EQ(both.busy_pct, 50.0);   // 200 busy of 400
  EXPECT_DOUBLE_EQ(both.iowait_pct, 25.0);
  EXPECT_DOUBLE_EQ(cpu_use(before, after, {0}).busy_pct, 100.0);
}

TEST(ProcStats, PidStatWithAwkwardComm) {
  const char* text =
      "4242 (pt_data_worker (1)) S 4200 4100 4200 0 -1 4194560 100 0 0 0 350 120 0 0 20 0 3 0 12345 1000000 2560 "
      "18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  auto p = parse_pid_stat(text);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pid, 4242);
  EXPECT_EQ(p->comm, "pt_data_worker (1)");
  EXPECT_EQ(p->state, 'S');
  EXPECT_EQ(p->ppid, 4200);
  EXPECT_EQ(p->pgrp, 4100);
  EXPECT_EQ(p->utime, 350U);
  EXPECT_EQ(p->stime, 120U);
  EXPECT_EQ(p->threads, 3);
  EXPECT_EQ(p->rss_pages, 2560U);
  EXPECT_EQ(p->flags, 4194560U);
  EXPECT_FALSE(p->kernel_thread());
  EXPECT_FALSE(parse_pid_stat("garbage"));
}

// diagnose --pid refuses what is no job: kthreadd's flags carry PF_KTHREAD.
TEST(ProcStats, TraceTargetsThatAreNoJob) {
  const auto kthreadd = parse_pid_stat(
      "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 3 0 0 20 0 1 0 9 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 "
      "0 0 0 0 17 1 0 0 0 0 0\n");
  ASSERT_TRUE(kthreadd);
  EXPECT_TRUE(kthreadd->kernel_thread());
  EXPECT_NE(trace_target_problem(*kthreadd, 999, true).value_or("").find("kernel thread"), std::string::npos);
  PidStat init;
  init.pid = 1;
  init.comm = "systemd";
  EXPECT_NE(trace_target_problem(init, 999, false).value_or("").find("init"), std::string::npos);
  EXPECT_FALSE(trace_target_problem(init, 999, true));  // --force
  PidStat self;
  self.pid = 999;
  EXPECT_NE(trace_target_problem(self, 999, false).value_or("").find("this gpufeed"), std::string::npos);
  PidStat job;
  job.pid = 4242;
  EXPECT_FALSE(trace_target_problem(job, 999, false));
}

TEST(ProcStats, PressureMeminfoSyscall) {
  EXPECT_EQ(parse_pressure_some_total("some avg10=1.00 avg60=0.50 avg300=0.10 total=123456\nfull avg10=0 total=9\n"),
            123456U);
  EXPECT_FALSE(parse_pressure_some_total(""));
  auto m = parse_meminfo("MemTotal: 100 kB\nMemFree: 10 kB\nMemAvailable: 50 kB\nCached: 20 kB\n");
  EXPECT_EQ(m.available_bytes, 50U * 1024);
  EXPECT_EQ(m.cached_bytes, 20U * 1024);
  EXPECT_EQ(parse_proc_syscall("7 0x7ffd 0x1 0x3e8 0x0 0x0 0x0 0x7ffd 0x7f12\n"), 7);
  EXPECT_FALSE(parse_proc_syscall("running\n"));
  EXPECT_FALSE(parse_proc_syscall("-1 0x7ffd 0x7f12\n"));
}

}  // namespace
}  // namespace gpufeed
