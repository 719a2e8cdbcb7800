// Histograms, /proc parsers, mount lookup and the loop-step estimate of the
// diagnose core.
#include <gtest/gtest.h>

#include "syscall_nrs.h"
#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/diagnose/histogram.hpp"
#include "gpufeed/diagnose/mounts.hpp"
#include "gpufeed/diagnose/proc_stats.hpp"
#include "gpufeed/diagnose/syscalls.hpp"

namespace gpufeed {
namespace {

TEST(Histogram, Log2BucketsAndInterpolatedQuantiles) {
  LatencyHistogram h;
  for (int i = 0; i < 100; ++i) h.add(3000);  // bucket [2048, 4096)
  EXPECT_EQ(h.count, 100U);
  EXPECT_EQ(h.slots[11], 100U);
  EXPECT_DOUBLE_EQ(h.mean_ns(), 3000);
  auto p50 = h.quantile_ns(0.5);
  ASSERT_TRUE(p50);
  EXPECT_GE(*p50, 2048);
  EXPECT_LE(*p50, 4096);
  EXPECT_FALSE(LatencyHistogram{}.quantile_ns(0.5));
}

TEST(Histogram, ExactTailSamplesGiveExactQuantiles) {
  // 100 calls, all slow: the quantiles come from the exact durations, so a
  // 20 ms median is 20 ms, not "somewhere in 16-33 ms".
  LatencyHistogram h;
  std::vector<double> exact;
  for (int i = 0; i < 100; ++i) {
    const double ns = 20e6 + (i - 50) * 1e4;
    h.add(static_cast<std::uint64_t>(ns));
    exact.push_back(ns);
  }
  auto p50 = h.quantile_ns(0.5, exact, 1e6);
  ASSERT_TRUE(p50);
  EXPECT_NEAR(*p50, 20e6, 2e4);
  // Mixed: 60 fast calls under the threshold, 40 slow ones: p50 is fast.
  LatencyHistogram mixed;
  std::vector<double> slow;
  for (int i = 0; i < 60; ++i) mixed.add(10000);
  for (int i = 0; i < 40; ++i) {
    mixed.add(30000000);
    slow.push_back(30e6);
  }
  EXPECT_LT(*mixed.quantile_ns(0.5, slow, 1e6), 1e6);
  EXPECT_DOUBLE_EQ(*mixed.quantile_ns(0.99, slow, 1e6), 30e6);
}

TEST(Histogram, DrawsOneRowPerBucketBetweenFirstAndLast) {
  LatencyHistogram h;
  h.add(1500);
  h.add(9000);
  auto rows = draw_histogram(h, 10);
  ASSERT_EQ(rows.size(), 4U);  // 1-2 us, 2-4 us and 4-8 us (empty), 8-16 us
  EXPECT_NE(rows[0].find("|**********|"), std::string::npos) << rows[0];
}

// A loop that waits for every batch: 40 ms waits (two calls each, 0.3 ms
// apart), then a 60 ms step with +-3 ms of jitter, two ranks.
Evidence starved_loop(double step_ms, int cycles, int every = 1) {
  Evidence e;
  e.ebpf = true;
  e.ranks = 2;
  e.window_s = 30;
  for (int rank = 0; rank < 2; ++rank) {
    double t_ms = 1000;
    for (int i = 0; i < cycles; ++i) {
      const double jitter = ((i * 7919) % 7 - 3);  // -3..+3 ms, deterministic
      if (i % every == 0) {
        e.waits.push_back({t_ms / 1e3, 30.0, 100 + rank, rank, 7});
        e.waits.push_back({(t_ms + 30.3) / 1e3, 9.7, 100 + rank, rank, 0});
        t_ms += 40;
      }
      t_ms += step_ms + jitter;
    }
  }
  return e;
}

TEST(LoopStep, GapsBetweenMergedWaitsAreTheStep) {
  const LoopStep st = loop_step(starved_loop(60, 100));
  ASSERT_TRUE(st.median_ms) << st.unavailable;
  EXPECT_NEAR(*st.median_ms, 60, 1.0);  // not 30 or 0.3: a wait's two calls are one wait
  EXPECT_EQ(st.cycles, 2 * 99);         // per rank, never across ranks
  EXPECT_EQ(st.loops, 2);
  EXPECT_NEAR(st.span_s, 9.9, 0.1);     // 99 cycles of a 40 ms wait and a 60 ms step, per loop
  EXPECT_GE(st.p10_ms, 56.5);
  EXPECT_LE(st.p90_ms, 63.5);
  EXPECT_GT(st.spread_ms, 0.5);
  EXPECT_LT(st.spread_ms, 3.5);
  EXPECT_TRUE(st.unavailable.empty());
}

TEST(LoopStep, NoEstimateWithoutTracingOrWaits) {
  Evidence e = starved_loop(60, 100);
  e.ebpf = false;
  EXPECT_FALSE(loop_step(e).median_ms);
  EXPECT_NE(loop_step(e).unavailable.find("syscall tracing"), std::string::npos);
  const LoopStep few = loop_step(starved_loop(60, 4));
  EXPECT_FALSE(few.median_ms);
  EXPECT_NE(few.unavailable.find("only 6 waits"), std::string::npos) << few.unavailable;
}

// One loop (pid 100) waiting 2 ms, then each gap in turn (ms); a gap given
// as negative is a split wait instead: 1 ms of wait that far after the last.
Evidence loop_with_gaps(const std::vector<double>& gaps_ms) {
  Evidence e;
  e.ebpf = true;
  e.window_s = 30;
  double t_ms = 1000;
  e.waits.push_back({t_ms / 1e3, 2.0, 100, 0, 7});
  double last_end = t_ms + 2.0;
  for (double g : gaps_ms) {
    const double dur = g < 0 ? 1.0 : 2.0;
    t_ms = last_end + std::abs(g);
    e.waits.push_back({t_ms / 1e3, dur, 100, 0, 7});
    last_end = t_ms + dur;
  }
  return e;
}

// n gaps, the i-th f(i) ms.
template <typename F>
std::vector<double> gaps_of(int n, F f) {
  std::vector<double> gaps;
  for (int i = 0; i < n; ++i) gaps.push_back(f(i));
  return gaps;
}

TEST(LoopStep, APartlyFedLoopGivesTheStepFromItsOneStepGaps) {
  // Waits before one step in two: half of the 60 gaps span two 21 ms steps,
  // so the median of all gaps falls between one and two steps (31.5 ms) and
  // p10 is not far enough below it to tell.
  const LoopStep st =
      loop_step(loop_with_gaps(gaps_of(60, [](int i) { return 21.0 * (i % 2 == 0 ? 1 : 2) + ((i * 7919) % 5 - 2) * 0.3; })));
  ASSERT_TRUE(st.median_ms) << st.unavailable;
  EXPECT_NEAR(*st.median_ms, 21, 0.7);
  EXPECT_LE(st.p90_ms, 21.7);
  EXPECT_NEAR(st.ready_fraction, 1.0 / 3, 0.02);  // 60 gaps, 90 steps
  EXPECT_EQ(st.steps, 90);
}

TEST(LoopStep, AWaitSplitByTheBatchsReceiveIsNotAStep) {
  // On a loaded machine the calls that receive a batch can split one wait
  // in two, 1.2 ms apart (over the 1 ms merge): a cluster of short gaps
  // that is no step, beside the 21.8 ms steps (nearly 18 x 1.2 ms).
  std::vector<double> gaps;
  for (int i = 0; i < 50; ++i) {
    if (i % 4 == 0) gaps.push_back(-1.2);
    gaps.push_back(21.8);
  }
  const LoopStep st = loop_step(loop_with_gaps(gaps));
  ASSERT_TRUE(st.median_ms) << st.unavailable;
  EXPECT_NEAR(*st.median_ms, 21.8, 0.05);
  EXPECT_LT(st.ready_fraction, 0.01);
  EXPECT_EQ(st.cycles, 63);  // 50 steps and 13 splits: tune --from must not count the splits as steps
  EXPECT_EQ(st.steps, 50);
}

TEST(LoopStep, GapsOfOneToThreeStepsAreMultiplesOfTheStep) {
  const LoopStep st = loop_step(loop_with_gaps(gaps_of(60, [](int i) { return 60.0 * (1 + i % 3); })));
  ASSERT_TRUE(st.median_ms) << st.unavailable;
  EXPECT_NEAR(*st.median_ms, 60, 0.5);
  EXPECT_GT(st.ready_fraction, 0.4);
}

TEST(LoopStep, IrregularGapsThatAreNoMultiplesGetNoEstimate) {
  // Gaps spread evenly over 20-200 ms: no one step they are multiples of.
  const LoopStep st = loop_step(loop_with_gaps(gaps_of(90, [](int i) { return 20.0 + (i * 37) % 90 * 2; })));
  EXPECT_FALSE(st.median_ms);
  EXPECT_NE(st.unavailable.find("not multiples"), std::string::npos) << st.unavailable;
}

TEST(LoopStep, ALoopThatWaitsForEveryBatchHasNoReadySteps) {
  const LoopStep st = loop_step(starved_loop(60, 100));
  ASSERT_TRUE(st.median_ms);
  EXPECT_EQ(st.ready_fraction, 0.0);
}

TEST(LoaderFigures, FilesOpenedLeaveOutOpensThatCreateAFile) {
  // A PyTorch worker opens one /dev/shm segment (O_CREAT) per batch for its
  // tensors: 80 dataset files and 10 batches are 80 files opened, not 90.
  Evidence e;
  e.ebpf = true;
  e.window_s = 10;
  SyscallStat files{257, Role::Worker, CallKind::Path, {}};
  SyscallStat shm{257, Role::Worker, CallKind::Create, {}};
  for (int i = 0; i < 80; ++i) files.hist.add(1000);
  for (int i = 0; i < 10; ++i) shm.hist.add(1000);
  e.syscalls = {files, shm};
  EXPECT_EQ(loader_figures(e).worker_opens, 80U);
  EXPECT_EQ(call_label(257, CallKind::Create), "openat(create)");
  EXPECT_EQ(call_label(257, CallKind::Path), "openat");
}

TEST(Syscalls, NamesAndClasses) {
  EXPECT_EQ(sys::name(257), "openat");
  EXPECT_EQ(sys::name(262), "newfstatat");
  EXPECT_EQ(sys::name(99999), "syscall_99999");
  EXPECT_TRUE(sys::is_stat(262));
  EXPECT_TRUE(sys::is_open(257));
  EXPECT_TRUE(sys::is_wait(202));
  EXPECT_FALSE(sys::is_wait(0));
  EXPECT_TRUE(sys::is_pipe_read(0));
}

// bpf/syscall_nrs.h is what both the BPF programs and the core compare
// against; the host's UAPI header (the name table) is the truth it must match.
TEST(Syscalls, TheSharedNumbersAreTheHostKernelsOwn) {
  const std::pair<int, const char*> shared[] = {
      {GF_NR_read, "read"}, {GF_NR_close, "close"}, {GF_NR_fstat, "fstat"}, {GF_NR_pread64, "pread64"},
      {GF_NR_readv, "readv"}, {GF_NR_recvfrom, "recvfrom"}, {GF_NR_recvmsg, "recvmsg"}, {GF_NR_futex, "futex"},
      {GF_NR_getdents64, "getdents64"}, {GF_NR_openat, "openat"}, {GF_NR_newfstatat, "newfstatat"},
      {GF_NR_faccessat, "faccessat"}, {GF_NR_pselect6, "pselect6"}, {GF_NR_ppoll, "ppoll"},
      {GF_NR_epoll_pwait, "epoll_pwait"}, {GF_NR_preadv, "preadv"}, {GF_NR_preadv2, "preadv2"},
      {GF_NR_statx, "statx"}, {GF_NR_openat2, "openat2"}, {GF_NR_faccessat2, "faccessat2"},
      {GF_NR_epoll_pwait2, "epoll_pwait2"}, {GF_NR_futex_waitv, "futex_waitv"}, {GF_NR_open, "open"},
      {GF_NR_stat, "stat"}, {GF_NR_lstat, "lstat"}, {GF_NR_access, "access"}, {GF_NR_poll, "poll"},
      {GF_NR_select, "select"}, {GF_NR_epoll_wait, "epoll_wait"}};
  for (const auto& [nr, want] : shared) {
    if (nr >= GF_NR_ABSENT(0)) {
      // Absent on this architecture: no real call carries the number.
      EXPECT_EQ(sys::name(nr), "syscall_" + std::to_string(nr)) << want;
      continue;
    }
    EXPECT_EQ(sys::name(nr), want) << "bpf/syscall_nrs.h gives " << want << " number " << nr;
  }
  EXPECT_TRUE(sys::is_open(GF_NR_openat));
  EXPECT_TRUE(sys::is_stat(GF_NR_statx));
  EXPECT_TRUE(sys::is_read(GF_NR_pread64));
  EXPECT_FALSE(sys::is_read(GF_NR_close));
}

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

TEST(Mounts, LongestPrefixAndDevice) {
  auto mounts = parse_mountinfo(
      "22 1 254:0 / / rw - ext4 /dev/vda rw\n"
      "30 22 0:45 / /mnt/s3 rw - fuse.s3fs s3fs rw\n"
      "31 22 0:46 /sub /mnt/s3data rw - fuse.latencyfs latencyfs rw\n");
  MountTable t(mounts);
  EXPECT_EQ(t.by_path("/mnt/s3/a/b.jpg")->fs_type, "fuse.s3fs");
  EXPECT_EQ(t.by_path("/mnt/s3data/x")->fs_type, "fuse.latencyfs");  // not /mnt/s3
  EXPECT_EQ(t.by_path("/home/x")->fs_type, "ext4");
  EXPECT_EQ(t.by_kernel_dev((0U << 20) | 45)->mount_point, "/mnt/s3");
  EXPECT_EQ(t.by_kernel_dev((254U << 20) | 0)->mount_point, "/");
  EXPECT_EQ(t.by_kernel_dev(12345), nullptr);
}

TEST(Mounts, StorageClassesAndPaths) {
  EXPECT_EQ(storage_class("fuse.s3fs"), StorageClass::Fuse);
  EXPECT_EQ(storage_class("nfs4"), StorageClass::Network);
  EXPECT_EQ(storage_class("lustre"), StorageClass::Network);
  EXPECT_EQ(storage_class("xfs"), StorageClass::Local);
  EXPECT_EQ(storage_class("overlay"), StorageClass::Overlay);
  EXPECT_TRUE(is_remote_like(StorageClass::Fuse));
  EXPECT_FALSE(is_remote_like(StorageClass::Local));
  EXPECT_EQ(normalise_path("/a/./b/../c//d"), "/a/c/d");
  EXPECT_EQ(group_prefix("/mnt/s3/train/n01/x.jpg", "/mnt/s3"), "/mnt/s3/train/n01");
  EXPECT_EQ(group_prefix("/mnt/s3/x.jpg", "/mnt/s3"), "/mnt/s3");
  EXPECT_EQ(group_prefix("/data/a/b/c/d/x.jpg", "/"), "/data/a");
}

}  // namespace
}  // namespace gpufeed
