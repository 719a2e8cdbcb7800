// A job's CPU per role from snapshots of its process group, and what a
// trial keeps of it (job_cpu.hpp).
#include <gtest/gtest.h>

#include "gpufeed/tune/job_cpu.hpp"

namespace gpufeed::tune {
namespace {

// sh -c (1) -> python, the loop (2) -> two DataLoader workers (3, 4).
TEST(JobCpu, WorkersAreTheLeavesAndTheirParentIsTheLoop) {
  const std::vector<JobProcess> before = {{1, 0, 0.01}, {2, 1, 3.0}, {3, 2, 1.0}, {4, 2, 1.5}};
  const std::vector<JobProcess> after = {{1, 0, 0.01}, {2, 1, 3.2}, {3, 2, 2.0}, {4, 2, 2.25}};
  const auto cpu = job_cpu_between(before, after);
  EXPECT_EQ(cpu.loops, 1);
  EXPECT_EQ(cpu.workers, 2);
  EXPECT_NEAR(cpu.loop_cpu_s, 0.2, 1e-9) << "the loop's start-up (imports) is not counted";
  EXPECT_NEAR(cpu.worker_cpu_s, 1.75, 1e-9);
}

TEST(JobCpu, AWorkerBornBetweenTheSnapshotsCountsAllItsCpuAndOneThatEndedNone) {
  // Worker 3 ended (an epoch's non-persistent workers); 5 replaced it.
  const std::vector<JobProcess> before = {{2, 1, 1.0}, {3, 2, 1.0}, {4, 2, 1.0}};
  const std::vector<JobProcess> after = {{2, 1, 1.1}, {4, 2, 1.5}, {5, 2, 0.25}};
  const auto cpu = job_cpu_between(before, after);
  EXPECT_EQ(cpu.workers, 2);
  EXPECT_NEAR(cpu.worker_cpu_s, 0.75, 1e-9);
}

TEST(JobCpu, EachRanksLoopCountsAndTheLauncherIsNeither) {
  // torchrun (1) -> ranks 2 and 3 -> two workers each.
  const std::vector<JobProcess> after = {{1, 0, 9.0}, {2, 1, 1.0}, {3, 1, 1.0},
                                         {4, 2, 2.0}, {5, 2, 2.0}, {6, 3, 2.0}, {7, 3, 2.0}};
  const auto cpu = job_cpu_between({}, after);
  EXPECT_EQ(cpu.loops, 2);
  EXPECT_EQ(cpu.workers, 4);
  EXPECT_NEAR(cpu.loop_cpu_s, 2.0, 1e-9) << "the launcher's CPU is not a loop's";
  EXPECT_NEAR(cpu.worker_cpu_s, 8.0, 1e-9);
}

TEST(JobCpu, JobLoopsNamesEachLoopAndItsWorkers) {
  // torchrun (1) -> ranks 2 and 3 -> workers; before rank 3's workers start,
  // rank 3 is a leaf and torchrun is no loop (rank 2 is not a leaf).
  const auto loops = job_loops({{1, 0, 0}, {2, 1, 0}, {3, 1, 0}, {4, 2, 0}, {5, 2, 0}});
  ASSERT_EQ(loops.size(), 1U);
  EXPECT_EQ(loops[0].pid, 2);
  EXPECT_EQ(loops[0].workers, (std::vector<int>{4, 5}));
  // sh -c (1) -> python (2), still importing: the shell reads as a loop
  // here; the tracer's attach (job_wait_trace.cpp) also asks that a loop's
  // workers be forks of it.
  const auto early = job_loops({{1, 0, 0}, {2, 1, 0}});
  ASSERT_EQ(early.size(), 1U);
  EXPECT_EQ(early[0].pid, 1);
}

TEST(JobCpu, AJobWithoutWorkersHasNoRoles) {
  const auto cpu = job_cpu_between({}, {{1, 0, 5.0}});
  EXPECT_EQ(cpu.loops, 0);
  Trial t;
  record_job_cpu(t, cpu, 500, 2, 8, 1);
  EXPECT_EQ(t.transform_samples, 0u) << "nothing recorded";
}

// A helper the launcher started beside the training process, with children
// of its own (a compile pool), reads as a second loop: for one rank,
// nothing is recorded.
TEST(JobCpu, MoreLoopsThanRanksRecordNothing) {
  const std::vector<JobProcess> after = {{1, 0, 0.0}, {2, 1, 1.0}, {3, 2, 2.0}, {4, 2, 2.0}, {5, 1, 0.5}, {6, 5, 3.0}};
  const auto cpu = job_cpu_between({}, after);
  EXPECT_EQ(cpu.loops, 2);
  Trial t;
  record_job_cpu(t, cpu, 500, 2, 8, 1);
  EXPECT_EQ(t.transform_samples, 0u);
  record_job_cpu(t, cpu, 500, 2, 8, 2);
  EXPECT_GT(t.transform_samples, 0u) << "two ranks: two loops";
}

TEST(JobCpu, ATrialKeepsCpuPerSampleAndTheLoopsPerBatch) {
  JobCpu cpu;
  cpu.loops = 1;
  cpu.workers = 2;
  cpu.worker_cpu_s = 2.0;
  cpu.loop_cpu_s = 0.1;
  Trial t;
  record_job_cpu(t, cpu, 500, 2.0, 8, 1);  // 1000 samples in the window
  EXPECT_EQ(t.transform_samples, 1000u);
  EXPECT_NEAR(t.transform_ms, 2.0, 1e-9);
  EXPECT_NEAR(t.loop_cpu_ms, 0.8, 1e-9) << "0.1 ms per sample, 8 per batch";
  // Two ranks at 500/s each: twice the samples for the same CPU.
  cpu.loops = 2;
  Trial two;
  record_job_cpu(two, cpu, 500, 2.0, 8, 2);
  EXPECT_NEAR(two.transform_ms, 1.0, 1e-9);
  EXPECT_NEAR(two.loop_cpu_ms, 0.4, 1e-9) << "per rank's batch";
  // A fork server's few ticks are no loop's CPU.
  cpu.loops = 1;
  cpu.loop_cpu_s = 0.001;
  Trial fork_server;
  record_job_cpu(fork_server, cpu, 500, 2.0, 8, 1);
  EXPECT_GT(fork_server.transform_samples, 0u);
  EXPECT_EQ(fork_server.loop_cpu_ms, 0.0);
}

Trial job_trial(int workers, int round, double cpu_ms, double loop_ms, std::uint64_t samples = 4000) {
  Trial t;
  t.candidate = {workers, 8, true};
  t.round = round;
  t.samples_per_s = 500;
  t.transform_ms = cpu_ms;
  t.transform_samples = samples;
  t.loop_cpu_ms = loop_ms;
  return t;
}

TEST(JobCpu, FullTrialsSpeakForTheJobWhenAnyMeasuredIt) {
  const NodeShape node{1, 2};
  const std::vector<Trial> trials = {job_trial(1, 1, 5.0, 3.0), job_trial(2, 1, 5.0, 3.0), job_trial(1, 2, 3.0, 1.0),
                                     job_trial(2, 2, 3.3, 1.2), job_trial(2, 2, 3.3, 1.4)};
  const auto cpu = job_cpu_from_trials(trials, node);
  ASSERT_TRUE(cpu.used);
  EXPECT_EQ(cpu.trials, 3);
  EXPECT_NEAR(cpu.cpu_ms, 3.0, 0.01);
  EXPECT_NEAR(cpu.slowdown, 1.1, 0.01);
  EXPECT_NEAR(loop_cpu_from_trials(trials), 1.2, 1e-9) << "the median of the full trials'";
  // Only short trials: they speak.
  const std::vector<Trial> short_only = {trials[0], trials[1]};
  EXPECT_NEAR(job_cpu_from_trials(short_only, node).cpu_ms, 5.0, 0.01);
  EXPECT_NEAR(loop_cpu_from_trials(short_only), 3.0, 1e-9);
  EXPECT_EQ(loop_cpu_from_trials({}), 0.0);
}

TEST(JobCpu, TrialsOfMoreWorkersThanCoresGiveTheirWeightedMean) {
  // The incident on FUSE: 3 to 8 workers on 2 cores, mostly waiting on the store.
  const NodeShape node{1, 2};
  const std::vector<Trial> trials = {job_trial(4, 2, 2.0, 0, 1000), job_trial(8, 2, 4.0, 0, 3000)};
  const auto cpu = job_cpu_from_trials(trials, node);
  ASSERT_TRUE(cpu.used);
  EXPECT_NEAR(cpu.cpu_ms, 3.5, 1e-9);
  EXPECT_EQ(cpu.slowdown, 1.0);
  EXPECT_FALSE(job_cpu_from_trials({job_trial(4, 2, 0.01, 0)}, node).used) << "too little CPU to matter";
  EXPECT_NE(cpu.describe().find("the mean over 2 trials with more workers than cores"), std::string::npos)
      << cpu.describe();
}

TEST(JobCpu, TheJobsCpuKeepsPhaseTwosShapeOnlyForTheSameKindOfWork) {
  Workload w;
  w.cpu_ms = Distribution({2.0, 2.5, 3.5});  // mean 2.667
  CpuFromTrials f{.used = true, .cpu_ms = 4.0, .slowdown = 1.2, .trials = 1, .mean_only = false, .why_not = {}};
  const auto scaled = with_job_cpu(w, f);
  EXPECT_NEAR(scaled.cpu_ms.mean(), 4.0, 1e-9);
  EXPECT_EQ(scaled.cpu_ms.values().size(), 3u) << "a decode like phase 2's: its shape";
  EXPECT_EQ(scaled.cpu_slowdown_all_cores, 1.2);
  // Raw bytes: a 5 us transform with a page fault, against 0.7 ms in Python.
  w.cpu_ms = Distribution({0.002, 0.002, 0.011});
  f.cpu_ms = 0.7;
  const auto constant = with_job_cpu(w, f);
  EXPECT_EQ(constant.cpu_ms.values(), (std::vector<double>{0.7}));
  f.used = false;
  EXPECT_EQ(with_job_cpu(w, f).cpu_ms.values(), w.cpu_ms.values()) << "nothing measured: unchanged";
}

// A trial's looks: sh (1) -> loop (2) -> workers (3, 4).
TEST(JobCpuTrack, KeepsLooksWhileTheFirstFiguresLoopsAndAWorkerOfTheLastRun) {
  JobCpuTrack t;
  t.look({{1, 0, 0}, {2, 1, 0.5}}, 0.5);  // start-up: no workers yet
  t.look({{1, 0, 0}, {2, 1, 1.0}, {3, 2, 0.1}, {4, 2, 0.1}}, 2.0);
  t.first_figure();
  EXPECT_DOUBLE_EQ(t.first_t_s(), 2.0);
  EXPECT_FALSE(t.cpu()) << "a window under a second says nothing";
  t.look({{1, 0, 0}, {2, 1, 1.5}, {3, 2, 1.1}, {4, 2, 1.6}}, 4.0);
  ASSERT_TRUE(t.cpu());
  EXPECT_NEAR(t.cpu()->worker_cpu_s, 2.5, 1e-9);
  EXPECT_DOUBLE_EQ(t.window_s(), 2.0);
  // The job ending by itself: its workers gone, a helper child in their place.
  t.look({{1, 0, 0}, {2, 1, 1.7}, {9, 2, 0.0}}, 5.0);
  EXPECT_DOUBLE_EQ(t.window_s(), 2.0) << "a look without the first figure's workers is not kept";
  // A new epoch's workers all at once: the same shape, none of the last's.
  t.look({{1, 0, 0}, {2, 1, 1.8}, {5, 2, 0.2}, {6, 2, 0.2}}, 6.0);
  EXPECT_DOUBLE_EQ(t.window_s(), 2.0) << "the CPU of the workers that ended is in no later look";
  t.look({{1, 0, 0}, {2, 1, 1.9}, {3, 2, 1.6}, {4, 2, 2.1}}, 7.0);
  EXPECT_DOUBLE_EQ(t.window_s(), 5.0) << "the first figure's workers, still running";
}

TEST(JobCpuTrack, AnEmptyFirstLookCountsNothing) {
  JobCpuTrack t;
  t.first_figure();
  t.look({{2, 1, 1.0}, {3, 2, 1.0}}, 3.0);
  EXPECT_FALSE(t.cpu()) << "every process would read as born in the window";
}

}  // namespace
}  // namespace gpufeed::tune
