#include <gtest/gtest.h>

#include <sstream>

#include "diagnose_scenarios.hpp"
#include "gpufeed/diagnose/report.hpp"
#include "support/schema_validator.hpp"

namespace gpufeed {
namespace {

Json document_of(const DiagnosisReport& r) {
  HostInfo host{"node", "6.1.0", "cpu", 8, {}, false};
  return make_document("diagnosis", host, to_json(r), std::chrono::system_clock::now());
}

Evidence with_fake_gpu(Evidence e) {
  GpuEvidence g;
  g.backend = "nvml";
  g.sample_hz = 10;
  g.devices = {{0, "NVIDIA", "H200", "0000:41:00.0", 141ULL << 30}};
  for (int i = 0; i < 100; ++i) g.samples.push_back({i * 0.1, 0, (i % 10) < 3 ? 100.0 : 0.0, 1ULL << 30, 300.0, 50.0});
  g.job_devices_from = "all GPUs";
  g.job_samples_per_s = 1200;
  e.gpu = g;
  e.gpu_measured = true;
  return e;
}

TEST(DiagnoseReport, JsonValidatesWithGpuEvidence) {
  auto r = make_diagnosis({{100, 0, "python train.py"}}, with_fake_gpu(testing::starved_on_fuse()));
  r.end_reason = "duration";
  Json doc = document_of(r);
  EXPECT_EQ(testing::schema_errors("diagnosis", doc), "") << doc["evidence"]["gpu"].dump(2);
  EXPECT_NEAR(doc["evidence"]["gpu"]["devices"][0]["busy_fraction"].get<double>(), 0.3, 0.01);
  EXPECT_NEAR(doc["evidence"]["gpu"]["devices"][0]["samples_per_joule"].get<double>(), 4.0, 1e-9);  // 1200/s at 300 W
  std::ostringstream out;
  render_text(r, TextStyle{false}, false, out);
  EXPECT_NE(out.str().find("GPUs the job uses"), std::string::npos);
  EXPECT_NE(out.str().find("NVML utilization"), std::string::npos);
  int counters = 0;
  const Json trace = chrome_trace(r);
  for (const auto& ev : trace["traceEvents"]) counters += ev.value("name", "") == "GPU 0 busy %";
  EXPECT_EQ(counters, 100);
}

TEST(DiagnoseReport, JsonValidatesForEveryScenario) {
  for (const auto& e : {testing::starved_on_fuse(), testing::healthy_local(), testing::cpu_bound(), testing::bursty()}) {
    auto r = make_diagnosis({{100, 0, "python train.py"}}, e);
    r.end_reason = "duration";
    Json doc = document_of(r);
    EXPECT_EQ(testing::schema_errors("diagnosis", doc), "") << doc.dump(2).substr(0, 2000);
  }
}

TEST(DiagnoseReport, SummaryComesFirstAndNamesCauseAndFix) {
  auto r = make_diagnosis({{100, 0, "python train.py"}}, testing::starved_on_fuse());
  r.end_reason = "duration";
  std::ostringstream out;
  render_text(r, TextStyle{false}, false, out);
  const std::string text = out.str();
  const auto summary = text.find("Summary"), findings = text.find("Findings"), evidence = text.find("Evidence");
  ASSERT_NE(summary, std::string::npos);
  EXPECT_LT(summary, findings);
  EXPECT_LT(findings, evidence);
  EXPECT_NE(text.find("Data wait: 78%"), std::string::npos) << text;
  EXPECT_NE(text.find("Top cause:"), std::string::npos);
  EXPECT_NE(text.find("Fix:"), std::string::npos);
  EXPECT_NE(text.find("/mnt/s3"), std::string::npos);
  EXPECT_NE(text.find("GPU activity not measured"), std::string::npos);
  Json doc = to_json(r);
  EXPECT_EQ(doc["summary"]["healthy"], false);
  EXPECT_NE(doc["summary"]["top_cause"], "loop.starved");
}

TEST(DiagnoseReport, HealthyReportSaysSo) {
  auto r = make_diagnosis({{100, 0, ""}}, testing::healthy_local());
  r.end_reason = "target exited";
  std::ostringstream out;
  render_text(r, TextStyle{false}, false, out);
  EXPECT_NE(out.str().find("Healthy: no finding"), std::string::npos);
  EXPECT_NE(out.str().find("Data wait: 2%"), std::string::npos) << out.str();
  EXPECT_EQ(to_json(r)["summary"]["healthy"], true);
}

TEST(DiagnoseReport, ChromeTraceHasSpansNamesAndCounters) {
  Evidence e = testing::starved_on_fuse();
  e.host.series = {{0.1, 20, 1}, {0.2, 30, 2}};
  auto r = make_diagnosis({{100, 0, ""}}, e);
  Json trace = chrome_trace(r);
  ASSERT_TRUE(trace["traceEvents"].is_array());
  int slow = 0, waits = 0, names = 0, counters = 0;
  for (const auto& ev : trace["traceEvents"]) {
    const std::string ph = ev["ph"];
    if (ph == "M") ++names;
    if (ph == "C") ++counters;
    if (ph == "X" && ev["cat"] == "slow-call") ++slow;
    if (ph == "X" && ev["cat"] == "data-wait") {
      ++waits;
      EXPECT_GT(ev["dur"].get<double>(), 0);
    }
  }
  EXPECT_EQ(slow, 800);
  EXPECT_EQ(waits, 140);
  EXPECT_EQ(names, 3);
  EXPECT_EQ(counters, 2);
}

TEST(DiagnoseReport, NotesSayWhatWasNotMeasured) {
  Evidence e = testing::healthy_local();
  e.ebpf = false;
  e.ebpf_unavailable = "no CAP_BPF";
  e.events_dropped = 3;
  auto r = make_diagnosis({{100, 0, ""}}, e);
  std::string notes;
  for (const auto& n : r.notes) notes += n + "\n";
  EXPECT_NE(notes.find("no CAP_BPF"), std::string::npos);
  EXPECT_NE(notes.find("GPU activity not measured"), std::string::npos);
  EXPECT_NE(notes.find("3 trace events were dropped"), std::string::npos);
}

}  // namespace
}  // namespace gpufeed
