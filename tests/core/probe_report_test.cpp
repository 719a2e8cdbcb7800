#include <gtest/gtest.h>

#include <sstream>

#include "gpufeed/document.hpp"
#include "gpufeed/probe_report.hpp"
#include "support/schema_validator.hpp"

namespace gpufeed {
namespace {

Topology small_gpu_box() {
  Topology t;
  t.source = "test";
  t.hostname = "box";
  t.packages = 1;
  t.numa_nodes.push_back({0, 0, 64ULL << 30, {0, 1, 2, 3, 4, 5, 6, 7}});
  for (int c = 0; c < 8; ++c) t.cores.push_back({0, {c}});
  t.pus = {0, 1, 2, 3, 4, 5, 6, 7};
  PciDevice gpu;
  gpu.bus_id = "0000:41:00.0";
  gpu.vendor_id = 0x10de;
  gpu.device_id = 0x2335;
  gpu.class_id = 0x0302;
  gpu.kind = DeviceKind::Gpu;
  gpu.model = "NVIDIA H200";
  gpu.numa_node = 0;
  gpu.local_cpus = t.pus;
  t.devices.push_back(gpu);
  return t;
}

ProcessView fake_process() {
  ProcessView p;
  p.allowed_cpus = {0, 1, 2, 3, 4, 5, 6, 7};
  p.cgroup.version = "v2";
  p.cgroup.memory_max_bytes = 16ULL << 30;
  p.kernel = "6.1.0";
  p.btf = true;
  p.privileges = privileges_from(0, 1000);
  p.gpu_libraries = {{"NVML", "NVIDIA GPU activity (diagnose)", true, "/usr/lib/libnvidia-ml.so.1"}};
  return p;
}

TEST(ProbeReport, JsonValidatesAgainstItsSchema) {
  auto report = make_probe_report(small_gpu_box(), fake_process());
  HostInfo host{"box", "6.1.0", "cpu", 8, {{"0000:41:00.0", "NVIDIA H200"}}, true};
  Json doc = make_document("probe", host, to_json(report), std::chrono::system_clock::now());
  EXPECT_EQ(testing::schema_errors("probe", doc), "");
  EXPECT_EQ(doc["budget"]["ranks"][0]["worker_cores"], 5);  // 8 - ceil(0.8) - 2
  EXPECT_EQ(doc["budget"]["ranks"][0]["prefetch_bytes"], 4ULL << 30);  // memory.max 16 GiB x 25%
}

Json valid_doc() {
  auto report = make_probe_report(small_gpu_box(), std::nullopt);
  HostInfo host{"box", "6.1.0", "cpu", 8, {}, false};
  return make_document("probe", host, to_json(report), std::chrono::system_clock::now());
}

TEST(ProbeReport, SchemaRejectsAMissingEnvelopeField) {
  Json doc = valid_doc();
  ASSERT_EQ(testing::schema_errors("probe", doc), "");
  doc.erase("created");
  const std::string errors = testing::schema_errors("probe", doc);
  EXPECT_NE(errors.find("created"), std::string::npos) << errors;
}

TEST(ProbeReport, SchemaRejectsAMalformedCpuList) {
  Json doc = valid_doc();
  doc["budget"]["ranks"][0]["worker_cpus"] = "zero to three";
  const std::string errors = testing::schema_errors("probe", doc);
  EXPECT_NE(errors.find("worker_cpus"), std::string::npos) << errors;
}

TEST(ProbeReport, SchemaRejectsAnotherKind) {
  Json doc = valid_doc();
  doc["schema"] = "gpufeed.diagnosis/v1";
  EXPECT_NE(testing::schema_errors("probe", doc), "");
}

TEST(ProbeReport, TextExplainsTheArithmeticAndMentionsTheProcess) {
  auto report = make_probe_report(small_gpu_box(), fake_process());
  std::ostringstream out;
  render_text(report, TextStyle{false}, false, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("NVIDIA H200"), std::string::npos);
  EXPECT_NE(text.find("8 cores - 1 reserved for the system (10%) - 2 for runtime threads"), std::string::npos) << text;
  EXPECT_NE(text.find("memory.max 16 GiB"), std::string::npos) << text;
  EXPECT_EQ(text.find("\x1b["), std::string::npos);
}

}  // namespace
}  // namespace gpufeed
