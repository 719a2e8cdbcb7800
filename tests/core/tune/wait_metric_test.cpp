// tune's data-wait metric: a job's throughput from its loop's waits for
// data, on scripted evidence (the real tracer: tune_cli_test.cpp,
// TuneCli.DataWaitMetric*).
#include <gtest/gtest.h>

#include "gpufeed/diagnose/syscalls.hpp"
#include "gpufeed/tune/config.hpp"
#include "gpufeed/tune/wait_metric.hpp"

namespace gpufeed::tune {
namespace {

constexpr int kFutex = 202;

// One loop: before each of `batches` steps of `step_ms` it waits `wait_ms`
// for its batch, except that with `ready_every` = k only one step in k
// waits (the rest find their batch ready). The histogram holds the waits.
Evidence loop(double step_ms, double wait_ms, int batches, int ready_every = 1) {
  Evidence e;
  e.ebpf = true;
  e.ranks = 1;
  double t_ms = 0;
  SyscallStat waits{kFutex, Role::Loop, CallKind::None, {}};
  for (int i = 0; i < batches; ++i) {
    if (i % ready_every == 0) {
      e.waits.push_back({t_ms / 1e3, wait_ms, 100, 0, kFutex});
      waits.hist.add(static_cast<std::uint64_t>(wait_ms * 1e6));
      t_ms += wait_ms;
    }
    t_ms += step_ms;
  }
  e.window_s = t_ms / 1e3;
  e.syscalls.push_back(waits);
  return e;
}

// 200 steps; before each the loop waits `waits` times, each `wait_ms`
// long, `apart_ms` from one's start to the next (a wait split by batches
// that arrive out of order), then runs `steps_ms(i)` of steps.
template <typename F>
Evidence split_loop(int waits, double wait_ms, double apart_ms, F steps_ms) {
  Evidence e;
  e.ebpf = true;
  e.ranks = 1;
  SyscallStat calls{kFutex, Role::Loop, CallKind::None, {}};
  double t_ms = 0;
  for (int i = 0; i < 200; ++i) {
    for (int w = 0; w < waits; ++w) {
      e.waits.push_back({t_ms / 1e3, wait_ms, 100, 0, kFutex});
      calls.hist.add(static_cast<std::uint64_t>(wait_ms * 1e6));
      t_ms += w + 1 < waits ? apart_ms : wait_ms;
    }
    t_ms += steps_ms(i);
  }
  e.window_s = t_ms / 1e3;
  e.syscalls.push_back(calls);
  return e;
}

TEST(WaitMetric, ALoopThatWaitsForEveryBatchGivesBatchesOverItsTime) {
  // 20 ms steps after 10 ms waits: a batch every 30 ms, 8 samples each.
  const WaitMetric m = wait_metric(loop(20, 10, 200), 8, std::nullopt);
  ASSERT_TRUE(m.samples_per_s) << m.unavailable;
  EXPECT_NEAR(*m.samples_per_s, 8 / 0.030, 8 / 0.030 * 0.01);
  EXPECT_NEAR(m.starvation, 10.0 / 30, 0.01);
  ASSERT_TRUE(m.step_ms);  // every step waited: the job's step, for later trials
  EXPECT_NEAR(*m.step_ms, 20, 0.1);
  EXPECT_FALSE(m.by_known_step);
}

TEST(WaitMetric, GapsOfTwoStepsAreCountedByTheJobsKnownStep) {
  // Two workers that each deliver every other batch: every gap is two 20 ms
  // steps. The gaps alone read one 40 ms step, half the true rate.
  const Evidence e = loop(20, 5, 400, 2);  // 2 batches per 45 ms
  const WaitMetric alone = wait_metric(e, 8, std::nullopt);
  ASSERT_TRUE(alone.samples_per_s);
  EXPECT_NEAR(*alone.samples_per_s, 8 / 0.045, 1);  // the ambiguity the known step resolves
  const WaitMetric known = wait_metric(e, 8, 20.0);
  ASSERT_TRUE(known.samples_per_s) << known.unavailable;
  EXPECT_NEAR(*known.samples_per_s, 16 / 0.045, 16 / 0.045 * 0.01);
  EXPECT_FALSE(known.step_ms);  // counted by a step it did not time itself
  EXPECT_NE(known.how.find("by the job's 20.0 ms"), std::string::npos) << known.how;
}

TEST(WaitMetric, TheKnownStepIsRefinedByTheTrialsOneStepGaps) {
  // --step-ms 10 is the sleep; the loop's step is 12 ms. Each wait is
  // split in two 1.5 ms apart (the gaps alone read a 1.5 ms "step"), then
  // gaps of 1 to 4 steps, which counted by 10 ms round 36 and 48 ms up to 4
  // and 5 steps: 10% too many.
  const Evidence e = split_loop(2, 2.0, 3.5, [](int i) { return 12.0 * (1 + i % 4); });
  const int steps = 50 * (1 + 2 + 3 + 4);
  const double last = 12.0 * 4;  // the last wait's steps lie past the span
  const double per_s = 8.0 * (steps - 4) / ((e.window_s * 1e3 - last) / 1e3);
  const WaitMetric m = wait_metric(e, 8, 10.0);
  ASSERT_TRUE(m.samples_per_s) << m.unavailable;
  EXPECT_NEAR(*m.samples_per_s, per_s, per_s * 0.02) << m.how;
  EXPECT_NE(m.how.find("steps of 12.0 ms (its one-step gaps, by the job's 10.0 ms"), std::string::npos) << m.how;
}

TEST(WaitMetric, SplitWaitsAreNoStepsOfTheirOwn) {
  // Eight workers deliver out of order: before each 60 ms step the loop
  // waits three times, 2 ms apart (batches arrive, not the one it needs).
  // The gaps alone find a step of a few ms in such a trace.
  const Evidence e = split_loop(3, 3.0, 5.0, [](int) { return 60.0; });
  const double per_s = 8 / (e.window_s / 200);
  const WaitMetric alone = wait_metric(e, 8, std::nullopt);
  ASSERT_TRUE(alone.samples_per_s);
  EXPECT_GT(*alone.samples_per_s, 10 * per_s) << "the gaps alone: " << alone.how;
  const WaitMetric m = wait_metric(e, 8, 60.0);
  ASSERT_TRUE(m.samples_per_s) << m.unavailable;
  EXPECT_NEAR(*m.samples_per_s, per_s, per_s * 0.03) << m.how;
}

TEST(WaitMetric, AStepNoWholeMultipleOfTheKnownOneIsTheLoopsOwn) {
  // 22 ms against 20 ms known: --step-ms is the step's sleep, and the loop
  // also receives the batch. 31 ms (x1.55): a loop slowed by workers
  // crowding its cores. Neither is 2, 3 ... steps: the gaps count as they are.
  for (double step : {22.0, 31.0}) {
    const WaitMetric m = wait_metric(loop(step, 10, 200), 8, 20.0);
    ASSERT_TRUE(m.samples_per_s) << step;
    const double per_s = 8 / ((step + 10) / 1e3);
    EXPECT_NEAR(*m.samples_per_s, per_s, per_s * 0.01) << step;
    ASSERT_TRUE(m.step_ms) << step;
    EXPECT_NEAR(*m.step_ms, step, 0.1);
  }
}

TEST(WaitMetric, AFedLoopIsPricedByTheKnownStepOrHasNoFigure) {
  // Three short waits in 200 steps: fed. Its waits cannot time its step.
  Evidence e = loop(20, 1, 200, 70);
  const WaitMetric none = wait_metric(e, 8, std::nullopt);
  EXPECT_FALSE(none.samples_per_s);
  EXPECT_FALSE(none.more_time_helps);
  EXPECT_NE(none.unavailable.find("step_ms"), std::string::npos) << none.unavailable;
  const WaitMetric priced = wait_metric(e, 8, 20.0);
  ASSERT_TRUE(priced.samples_per_s) << priced.unavailable;
  EXPECT_TRUE(priced.by_known_step);
  EXPECT_NEAR(*priced.samples_per_s, 400 * (1 - priced.starvation), 0.01);
  EXPECT_LT(priced.starvation, 0.01);
}

TEST(WaitMetric, FewLongWaitsAskForALongerTrial) {
  // A batch every 1.5 s: 5 waits in the window, mostly waiting.
  const WaitMetric m = wait_metric(loop(100, 1400, 5), 256, 100.0);
  EXPECT_FALSE(m.samples_per_s);
  EXPECT_TRUE(m.more_time_helps);
  EXPECT_NE(m.unavailable.find("trial_seconds"), std::string::npos) << m.unavailable;
}

TEST(WaitMetric, UntracedEvidenceHasNoFigure) {
  Evidence e = loop(20, 10, 200);
  e.ebpf = false;
  const WaitMetric m = wait_metric(e, 8, 20.0);
  EXPECT_FALSE(m.samples_per_s);
  EXPECT_NE(m.unavailable.find("eBPF"), std::string::npos);
}

TEST(WaitMetric, TheConfigRecordsHowTheJobWasMeasured) {
  // check re-measures the job the way tune did: the metric round-trips, and
  // a config from before it existed reads as none (the regex, as then).
  TunedConfig c;
  c.workload.target = "exec";
  c.workload.exec = "python train.py --workers {num_workers}";
  c.workload.metric = "data-wait";
  Json doc = to_json(c);
  doc["schema"] = "gpufeed.config/v1";  // the document's envelope (document.hpp)
  const TunedConfig back = config_from_json(doc, "test");
  EXPECT_EQ(back.workload.metric, "data-wait");
  EXPECT_TRUE(back.workload.metric_regex.empty());
  Json old = doc;
  old["workload"].erase("metric");
  EXPECT_EQ(config_from_json(old, "test").workload.metric, "");
}

TEST(WaitMetric, AHistogramSinceASnapshotHoldsWhatCameAfter) {
  // The trace's window opens after the job settles: its histograms are the
  // counters less their values then.
  LatencyHistogram before, after;
  before.add(3000);
  after.add(3000);
  after.add(5000000);
  const LatencyHistogram d = after.since(before);
  EXPECT_EQ(d.count, 1U);
  EXPECT_EQ(d.total_ns, 5000000U);
  EXPECT_EQ(d.slots[11], 0U);
  EXPECT_EQ(d.slots[22], 1U);
  EXPECT_EQ(before.since(after).count, 0U) << "never below zero";
}

}  // namespace
}  // namespace gpufeed::tune
