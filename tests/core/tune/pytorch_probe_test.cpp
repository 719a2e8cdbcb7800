// tune --pytorch-probe's reading of the probe's answer (python/gpufeed_pytorch_probe.py).
#include <gtest/gtest.h>

#include "gpufeed/tune/pytorch_probe.hpp"

namespace gpufeed::tune {
namespace {

Json answer() {
  return Json::parse(R"({"schema": "gpufeed.pytorch-probe/v1", "torch": "1.13.0", "pil": "9.4.0",
                         "pipeline": "PIL open + convert(RGB) + whole crop", "worker_cpu_ms_per_sample": 3.2,
                         "loop_cpu_ms_per_batch": 0.95})");
}

TEST(PytorchProbe, ReadsTheWorkersAndTheLoopsCpu) {
  const auto r = read_pytorch_probe(answer());
  ASSERT_TRUE(r.costs) << r.error;
  EXPECT_DOUBLE_EQ(r.costs->worker_cpu_ms, 3.2);
  EXPECT_DOUBLE_EQ(r.costs->loop_cpu_ms_per_batch, 0.95);
  EXPECT_EQ(r.costs->versions, "torch 1.13.0, PIL 9.4.0");
  EXPECT_EQ(r.costs->pipeline, "PIL open + convert(RGB) + whole crop");
}

TEST(PytorchProbe, ALoopThatCostNothingMeasurableIsAFigure) {
  auto doc = answer();
  doc["loop_cpu_ms_per_batch"] = 0;
  const auto r = read_pytorch_probe(doc);
  ASSERT_TRUE(r.costs) << r.error;
  EXPECT_EQ(r.costs->loop_cpu_ms_per_batch, 0);
}

TEST(PytorchProbe, RefusesAnswersWithoutUsableFigures) {
  EXPECT_NE(read_pytorch_probe(Json::array()).error.find("not a gpufeed.pytorch-probe/v1"), std::string::npos);
  auto wrong = answer();
  wrong["schema"] = "gpufeed.pytorch-probe/v2";
  EXPECT_FALSE(read_pytorch_probe(wrong).costs);
  for (const Json& bad : {Json(0), Json(-1), Json("3.2"), Json(nullptr)}) {
    auto doc = answer();
    doc["worker_cpu_ms_per_sample"] = bad;
    const auto r = read_pytorch_probe(doc);
    EXPECT_FALSE(r.costs) << bad.dump();
    EXPECT_NE(r.error.find("worker"), std::string::npos) << r.error;
  }
  auto no_loop = answer();
  no_loop.erase("loop_cpu_ms_per_batch");
  EXPECT_NE(read_pytorch_probe(no_loop).error.find("loop"), std::string::npos);
  auto negative = answer();
  negative["loop_cpu_ms_per_batch"] = -0.1;
  EXPECT_FALSE(read_pytorch_probe(negative).costs);
}

// The ratio holds what the pipeline costs against the built-in decode timed
// in the same seconds; phase 2's figure (another moment) only stands in.
TEST(PytorchProbe, TheRatioIsTakenAgainstTheInterleavedBuiltInDecode) {
  PytorchCosts c;
  c.worker_cpu_ms = 4.4;
  c.builtin_cpu_ms = 4.0;
  EXPECT_DOUBLE_EQ(pytorch_ratio(c, 2.2), 1.1) << "the interleaved figure, not phase 2's";
  c.builtin_cpu_ms = 0;
  EXPECT_DOUBLE_EQ(pytorch_ratio(c, 2.2), 2.0) << "no interleaved figure: phase 2's";
  EXPECT_DOUBLE_EQ(pytorch_ratio(c, 0), 1.0) << "nothing to compare: no scaling";
}

TEST(PytorchProbe, TrialsScaleUpOnlyAndTheModelTakesTheRestFromTheirCpu) {
  EXPECT_DOUBLE_EQ(trial_cpu_scale(1.3), 1.3);
  EXPECT_DOUBLE_EQ(trial_cpu_scale(0.8), 1.0) << "a trial cannot run faster than the built-in decode";
  CpuFromTrials trials;
  trials.used = true;
  trials.cpu_ms = 5.2;  // the trials' samples: built-in decode x1.3
  trials.slowdown = 1.1;
  const auto scaled_up = pytorch_cpu_from_trials(trials, 1.3, trial_cpu_scale(1.3));
  EXPECT_DOUBLE_EQ(scaled_up.cpu_ms, 5.2) << "the trials already paid the ratio";
  EXPECT_DOUBLE_EQ(scaled_up.slowdown, 1.1);
  trials.cpu_ms = 4.0;  // unscaled trials of a pipeline cheaper than the built-in decode
  EXPECT_DOUBLE_EQ(pytorch_cpu_from_trials(trials, 0.8, trial_cpu_scale(0.8)).cpu_ms, 3.2);
  trials.used = false;
  EXPECT_FALSE(pytorch_cpu_from_trials(trials, 1.3, 1.3).used);
}

}  // namespace
}  // namespace gpufeed::tune
