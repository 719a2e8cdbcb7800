// What tune --from reads from a diagnosis (from_diagnosis.hpp), on
// hand-written documents shaped like diagnose's.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gpufeed/tune/from_diagnosis.hpp"

namespace gpufeed::tune {
namespace {

// A loop seen for a 10 s span with `cycles` gaps of `gap_ms`, two workers
// alive for 10 s each that opened `files` files.
Json diagnosis(double gap_ms, int cycles, double files, double ready = 0.0) {
  return Json::parse(fmt::format(R"({{"schema": "gpufeed.diagnosis/v1", "evidence": {{
      "loop_step": {{"median_ms": {}, "spread_ms": 1.0, "p10_ms": {}, "p90_ms": {}, "cycles": {},
                    "ready_fraction": {}, "loops": 1, "span_s": 10.0, "unavailable": null}},
      "workers": {{"max_per_rank": 2, "wall_s": 20.0, "files_opened": {}, "cpu_s": 4.0}},
      "processes": [{{"role": "loop", "cpu_s": 1.0}}, {{"role": "worker", "cpu_s": 2.0}}]}}}})",
                                 gap_ms, gap_ms - 1, gap_ms + 1, cycles, ready, files));
}

TEST(FromDiagnosis, AStarvedLoopsGapIsItsStep) {
  // 8-sample batches: 800 files in 10 s are 10 batches/s, and the loop
  // waited before each of its 100 steps (100 gaps in 10 s).
  const auto r = read_diagnosis(diagnosis(21.0, 100, 800), 8);
  ASSERT_TRUE(r.job) << r.error;
  EXPECT_DOUBLE_EQ(r.job->step_ms, 21.0);
  EXPECT_EQ(r.job->batches_per_wait, 1);
  EXPECT_TRUE(r.job->step_note.empty());
  EXPECT_DOUBLE_EQ(r.job->worker_cpu_ms, 5.0);   // 4 s over 800 files
  EXPECT_DOUBLE_EQ(r.job->loop_cpu_ms, 1.25);    // 1 s over 800 files
}

TEST(FromDiagnosis, BatchesArrivingInPairsHalveTheGap) {
  // Both workers' batches arrive together: the loop waits before one step
  // in two and finds the other ready, so its 50 gaps are 42 ms (two steps)
  // while the workers delivered 100 batches.
  const auto r = read_diagnosis(diagnosis(42.0, 50, 800), 8);
  ASSERT_TRUE(r.job) << r.error;
  EXPECT_EQ(r.job->batches_per_wait, 2);
  EXPECT_DOUBLE_EQ(r.job->step_ms, 21.0);
  EXPECT_NE(r.job->step_note.find("each gap held 2 steps"), std::string::npos) << r.job->step_note;
  // The same files in batches of 16 are the 50 batches the loop waited for.
  EXPECT_EQ(read_diagnosis(diagnosis(42.0, 50, 800), 16).job->batches_per_wait, 1);
}

TEST(FromDiagnosis, WaitsSplitInTwoAreNoSteps) {
  // 66 gaps, but 16 are one wait split in two by the calls that receive a
  // batch: the 50 gaps of two steps each held are what the loop ran, so the
  // 100 batches delivered still say two steps per gap. (Counting the 66 gaps
  // as steps read 1.5 batches per gap: one step of 42 ms, on a CI run.)
  Json doc = diagnosis(42.0, 66, 800);
  doc["evidence"]["loop_step"]["steps"] = 50;
  const auto r = read_diagnosis(doc, 8);
  ASSERT_TRUE(r.job) << r.error;
  EXPECT_EQ(r.job->batches_per_wait, 2);
  EXPECT_DOUBLE_EQ(r.job->step_ms, 21.0);
  EXPECT_DOUBLE_EQ(r.job->supply_ratio, 2.0);
  // A diagnosis written before "steps" takes its gaps as steps.
  doc["evidence"]["loop_step"].erase("steps");
  EXPECT_EQ(read_diagnosis(doc, 8).job->batches_per_wait, 1);
}

TEST(FromDiagnosis, StepsFoundReadyAreCountedAsSteps) {
  // diagnose saw one-step gaps and counted a third of the steps as ready:
  // 67 gaps are 100 steps, as many as the batches delivered.
  const auto r = read_diagnosis(diagnosis(21.0, 67, 800, 0.33), 8);
  ASSERT_TRUE(r.job) << r.error;
  EXPECT_EQ(r.job->batches_per_wait, 1);
}

TEST(FromDiagnosis, WithoutFilesOpenedTheGapIsTaken) {
  const auto r = read_diagnosis(diagnosis(42.0, 50, 0), 8);
  ASSERT_TRUE(r.job) << r.error;
  EXPECT_EQ(r.job->batches_per_wait, 1);
  EXPECT_DOUBLE_EQ(r.job->step_ms, 42.0);
  EXPECT_EQ(r.job->worker_cpu_ms, 0);
}

TEST(FromDiagnosis, NoStepGivesTheDiagnosisReason) {
  Json doc = diagnosis(21.0, 100, 800);
  doc["evidence"]["loop_step"]["median_ms"] = nullptr;
  doc["evidence"]["loop_step"]["unavailable"] = "only 3 waits for data between steps were seen";
  const auto r = read_diagnosis(doc, 8);
  EXPECT_FALSE(r.job);
  EXPECT_EQ(r.error, "only 3 waits for data between steps were seen");
  EXPECT_NE(read_diagnosis(Json::parse(R"({"schema": "gpufeed.diagnosis/v1"})"), 8).error.find("no evidence.loop_step"),
            std::string::npos);
}

TEST(FromDiagnosis, RatioNeedsEnoughFilesAndTime) {
  double ratio = -1;
  EXPECT_EQ(batches_per_wait(40, 20, 2, 8, 50, 10, 1, &ratio), 1);  // under 50 files
  EXPECT_EQ(ratio, 0);
  EXPECT_EQ(batches_per_wait(800, 20, 2, 8, 50, 10, 1, &ratio), 2);
  EXPECT_DOUBLE_EQ(ratio, 2.0);
  EXPECT_EQ(batches_per_wait(800, 20, 2, 8, 70, 10, 1, &ratio), 1);   // 1.43: not a whole second step
  EXPECT_EQ(batches_per_wait(1200, 20, 2, 8, 50, 10, 1, &ratio), 3);
}

}  // namespace
}  // namespace gpufeed::tune
