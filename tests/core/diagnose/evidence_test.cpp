// The loop-step estimate and the loader figures the diagnose core builds
// from the evidence.
#include <gtest/gtest.h>

#include "syscall_nrs.h"
#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/diagnose/histogram.hpp"
#include "gpufeed/diagnose/mounts.hpp"
#include "gpufeed/diagnose/proc_stats.hpp"
#include "gpufeed/diagnose/syscalls.hpp"

namespace gpufeed {
namespace {

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

}  // namespace
}  // namespace gpufeed
