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

}  // namespace
}  // namespace gpufeed::tune
