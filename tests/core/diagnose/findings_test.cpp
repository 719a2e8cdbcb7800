#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "diagnose_scenarios.hpp"
#include "gpufeed/diagnose/findings.hpp"
#include "gpufeed/diagnose/report.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

using namespace gpufeed::testing;

const Finding* find(const std::vector<Finding>&& fs, const std::string& id) = delete;  // would dangle
const Finding* find(const std::vector<Finding>& fs, const std::string& id) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.id == id; });
  return it == fs.end() ? nullptr : &*it;
}

TEST(DiagnoseRules, HealthyJobHasNoFinding) {
  auto fs = evaluate_rules(healthy_local());
  EXPECT_TRUE(fs.empty()) << fs.front().id << ": " << fs.front().title;
  auto fig = loader_figures(healthy_local());
  ASSERT_TRUE(fig.data_wait_fraction);
  EXPECT_LT(*fig.data_wait_fraction, 0.05);
}

TEST(DiagnoseRules, StarvedOnFuseNamesTheMountAndTheFix) {
  auto fs = evaluate_rules(starved_on_fuse());
  const Finding* starved = find(fs, "loop.starved");
  ASSERT_NE(starved, nullptr);
  EXPECT_EQ(starved->severity, Severity::Critical);
  EXPECT_NEAR(starved->figures["data_wait_fraction"].get<double>(), 7.0 / 9.0, 0.01);  // 7 s of waits from the first, at 1 s

  const Finding* meta = find(fs, "storage.slow-metadata");
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(meta->figures["mount_point"], "/mnt/s3");
  EXPECT_EQ(meta->figures["fs_type"], "fuse.s3fs");
  EXPECT_EQ(meta->figures["prefix"], "/mnt/s3/train/class_01");
  EXPECT_NEAR(meta->figures["stat_p50_ms"].get<double>(), 20.0, 2.0);
  EXPECT_NE(meta->advice.find("local"), std::string::npos);

  const Finding* workers = find(fs, "loader.too-few-workers");
  ASSERT_NE(workers, nullptr);
  EXPECT_GE(workers->figures["recommended_num_workers"].get<int>(), 7);  // 2 x ~0.99 / (1 - 0.74) x 1.15
  EXPECT_NE(workers->advice.find("num_workers="), std::string::npos);

  EXPECT_NE(find(fs, "workers.io-bound"), nullptr);
  EXPECT_EQ(find(fs, "workers.cpu-bound"), nullptr);
  EXPECT_NE(find(fs, "storage.small-files-remote"), nullptr);
}

// ImageNet-like class directories: the latencies are the mount's, so one
// finding for the mount, naming the others, not one per directory.
TEST(DiagnoseRules, ClassDirectoriesOnOneMountGiveOneSlowMetadataFinding) {
  Evidence e = starved_on_fuse();
  for (std::size_t i = 0; i < e.slow_calls.size(); ++i) {
    auto& path = e.slow_calls[i].path;
    const auto at = path.find("class_01");
    if (at != std::string::npos) path.replace(at, 8, "class_0" + std::to_string(1 + i % 3));
  }
  const auto fs = evaluate_rules(e);
  EXPECT_EQ(std::count_if(fs.begin(), fs.end(), [](const Finding& f) { return f.id == "storage.slow-metadata"; }), 1);
  const Finding* meta = find(fs, "storage.slow-metadata");
  ASSERT_NE(meta, nullptr);
  const bool names_the_others = std::any_of(meta->evidence.begin(), meta->evidence.end(), [](const std::string& line) {
    return line.find("and 2 other directories") != std::string::npos;
  });
  EXPECT_TRUE(names_the_others) << meta->evidence.at(2);
}

TEST(DiagnoseRules, TheTopCauseIsACauseNotTheSymptom) {
  auto report = make_diagnosis({{100, 0, "python train.py"}}, starved_on_fuse());
  const Finding* cause = top_cause(report);
  ASSERT_NE(cause, nullptr);
  EXPECT_NE(cause->id, "loop.starved");
  EXPECT_EQ(worst_severity(report), Severity::Critical);
}

TEST(DiagnoseRules, CpuBoundWorkersGetCpuAdvice) {
  auto fs = evaluate_rules(cpu_bound());
  const Finding* cpu = find(fs, "workers.cpu-bound");
  ASSERT_NE(cpu, nullptr);
  EXPECT_NE(cpu->advice.find("cheaper"), std::string::npos);
  EXPECT_EQ(find(fs, "workers.io-bound"), nullptr);
  EXPECT_EQ(find(fs, "storage.slow-metadata"), nullptr);
  // Starved, but the cores are saturated: more workers cannot help.
  EXPECT_EQ(find(fs, "loader.too-few-workers"), nullptr);
  EXPECT_EQ(find(fs, "cpu.saturated"), nullptr) << "workers.cpu-bound says it for CPU-bound workers";
}

// CPU-bound workers on cores with room: more workers help, up to the cores.
TEST(DiagnoseRules, CpuBoundWorkersWithIdleCoresGetMoreWorkersWithinTheCores) {
  Evidence e = cpu_bound();
  e.host.usable_cpus = 16;
  e.host.cpu_busy_pct = 30;
  const auto fs = evaluate_rules(e);
  const Finding* workers = find(fs, "loader.too-few-workers");
  ASSERT_NE(workers, nullptr);
  EXPECT_EQ(find(fs, "cpu.saturated"), nullptr);
  EXPECT_EQ(find(fs, "workers.cpu-bound"), nullptr) << "the cores are not saturated";
}

bool advises_more_workers(const Finding& f) {
  return f.advice.find("more workers overlap") != std::string::npos ||
         f.advice.find("more DataLoader workers hide") != std::string::npos ||
         f.advice.find("more workers shorten") != std::string::npos ||
         f.advice.find("more workers than cores is fine") != std::string::npos ||
         (f.id == "loader.too-few-workers");
}

// Workers asleep in FUSE calls while the daemon behind them fills the cores:
// the binding constraint is CPU. The top cause says so, and no finding asks
// for more workers.
TEST(DiagnoseRules, SaturatedCoresAreTheTopCauseAndNoFindingAsksForMoreWorkers) {
  const auto report = make_diagnosis({{100, 0, "python train.py"}}, starved_on_saturated_fuse());
  const Finding* cause = top_cause(report);
  ASSERT_NE(cause, nullptr);
  EXPECT_EQ(cause->id, "cpu.saturated");
  EXPECT_EQ(cause->severity, Severity::Critical);
  // 19 CPU-s busy; the job's 7 (loop 3, workers 2 + 4 x 0.5): 12 outside it.
  EXPECT_NEAR(cause->figures["outside_job_cpu_s"].get<double>(), 12.0, 0.01);
  EXPECT_NE(cause->advice.find("outside the job"), std::string::npos) << cause->advice;
  EXPECT_NE(cause->advice.find("cache tier"), std::string::npos) << cause->advice;
  for (const auto& f : report.findings) EXPECT_FALSE(advises_more_workers(f)) << f.id << ": " << f.advice;
  const Finding* over = find(report.findings, "cpu.oversubscribed");
  ASSERT_NE(over, nullptr) << "6 workers on 2 cores";
  EXPECT_EQ(over->severity, Severity::Warning) << "sleeping workers still cost when the cores are saturated";
  EXPECT_NE(find(report.findings, "storage.slow-metadata"), nullptr) << "the slow mount is still named";
}

// PSI alone says the cores are saturated: a task waits for a CPU most of the
// time even where the busy average looks moderate.
TEST(DiagnoseRules, CpuPressureAloneMarksTheCoresSaturated) {
  Evidence e = starved_on_fuse();
  e.host.psi_cpu_some_pct = 70;
  const auto fs = evaluate_rules(e);
  ASSERT_NE(find(fs, "cpu.saturated"), nullptr);
  EXPECT_EQ(find(fs, "loader.too-few-workers"), nullptr);
  e.host.psi_cpu_some_pct = 10;
  const auto calm = evaluate_rules(e);
  EXPECT_EQ(find(calm, "cpu.saturated"), nullptr);
  EXPECT_NE(find(calm, "loader.too-few-workers"), nullptr);
}

// The job fills the cores itself (its loop, not its I/O-bound workers).
TEST(DiagnoseRules, SaturatedByTheJobItselfAsksForFewerOrCheaperWorkers) {
  Evidence e = starved_on_fuse();
  e.host.usable_cpus = 1;
  e.host.cpu_busy_pct = 90;
  e.processes[0].cpu_s = 8;  // the loop: 8 of 9 busy CPU-s
  const auto fs = evaluate_rules(e);
  const Finding* sat = find(fs, "cpu.saturated");
  ASSERT_NE(sat, nullptr);
  EXPECT_NE(sat->advice.find("the job itself fills the cores"), std::string::npos) << sat->advice;
}

TEST(DiagnoseRules, BurstyWaitsAskForDeeperPrefetch) {
  auto fs = evaluate_rules(bursty());
  const Finding* pf = find(fs, "loader.shallow-prefetch");
  ASSERT_NE(pf, nullptr);
  EXPECT_NE(pf->advice.find("prefetch_factor"), std::string::npos);
  EXPECT_EQ(find(fs, "loader.too-few-workers"), nullptr);  // the workers have slack
}

TEST(DiagnoseRules, SteadyWaitsAreNotBursts) {
  Evidence e = bursty();
  e.waits.clear();
  add_waits(e, 100, 15);
  const auto fs = evaluate_rules(e);
  EXPECT_EQ(find(fs, "loader.shallow-prefetch"), nullptr);
}

TEST(DiagnoseRules, OversubscriptionCountsWorkersAcrossRanks) {
  Evidence e = cpu_bound();
  e.ranks = 2;
  for (int i = 0; i < 4; ++i) {
    auto p = process(201 + i, true, 9.5, 10, 'R');
    p.rank = 1;
    e.processes.push_back(p);
  }
  const auto fs = evaluate_rules(e);
  const Finding* over = find(fs, "cpu.oversubscribed");
  ASSERT_NE(over, nullptr);
  EXPECT_EQ(over->figures["workers"], 8);
  EXPECT_EQ(over->severity, Severity::Warning);
  // As many workers as cores is not oversubscription.
  const auto one_rank = evaluate_rules(cpu_bound());
  EXPECT_EQ(find(one_rank, "cpu.oversubscribed"), nullptr);
}

TEST(DiagnoseRules, SlowLocalDiskIsNotSmallFilesOnRemoteStorage) {
  Evidence e = starved_on_fuse();
  for (auto& c : e.slow_calls) c.fs_type = "ext4";
  auto fs = evaluate_rules(e);
  EXPECT_NE(find(fs, "storage.slow-metadata"), nullptr);
  EXPECT_EQ(find(fs, "storage.small-files-remote"), nullptr);
}

TEST(DiagnoseRules, ProcOnlyEvidenceLowersConfidence) {
  Evidence e;
  e.window_s = 10;
  e.ebpf = false;
  e.ebpf_unavailable = "no privilege";
  e.host.usable_cpus = 8;
  e.sampled = {100, 70, 200, 4, 150, 46};
  e.processes = {process(100, false, 3, 10), process(101, true, 1, 10), process(102, true, 1, 10)};
  auto fs = evaluate_rules(e);
  const Finding* starved = find(fs, "loop.starved");
  ASSERT_NE(starved, nullptr);
  EXPECT_NE(starved->confidence, Confidence::High);
  const Finding* workers = find(fs, "loader.too-few-workers");
  ASSERT_NE(workers, nullptr);
  EXPECT_EQ(workers->confidence, Confidence::Low);
}

TEST(DiagnoseRules, UnknownDataWaitMakesNoStarvationClaim) {
  Evidence e;
  e.window_s = 5;
  e.ebpf = false;
  EXPECT_TRUE(evaluate_rules(e).empty());
}

TEST(DiagnoseRules, SeverityParsing) {
  EXPECT_EQ(parse_severity("warning"), Severity::Warning);
  EXPECT_FALSE(parse_severity("loud"));
}

// The rules' table is the one list of finding ids: the JSON Schema's enum
// and docs/findings.md must hold exactly those, so a new finding cannot be
// added in one place and forgotten in another.
std::set<std::string> schema_finding_ids(const nlohmann::json& j) {
  std::set<std::string> out;
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      if (key == "id" && value.is_object() && value.contains("enum")) {
        for (const auto& id : value["enum"]) out.insert(id.get<std::string>());
      }
      const auto inner = schema_finding_ids(value);
      out.insert(inner.begin(), inner.end());
    }
  } else if (j.is_array()) {
    for (const auto& v : j) {
      const auto inner = schema_finding_ids(v);
      out.insert(inner.begin(), inner.end());
    }
  }
  return out;
}

TEST(DiagnoseRules, EveryFindingIdIsInTheSchemaAndTheDocs) {
  const auto ids = finding_ids();
  const std::set<std::string> table(ids.begin(), ids.end());
  EXPECT_EQ(table.size(), ids.size()) << "an id is in the table twice";
  const auto root = std::filesystem::path(GPUFEED_SOURCE_DIR);
  const auto schema = nlohmann::json::parse(testing::read_file(root / "docs/schema/diagnosis.schema.json"));
  EXPECT_EQ(schema_finding_ids(schema), table);
  std::istringstream docs(testing::read_file(root / "docs/findings.md"));
  std::set<std::string> headed;  // ids named in a "### " heading
  for (std::string line; std::getline(docs, line);) {
    if (line.rfind("### ", 0) != 0) continue;
    for (const auto& id : ids) {
      if (line.find("`" + id + "`") != std::string::npos) headed.insert(id);
    }
  }
  EXPECT_EQ(headed, table) << "every finding has a section in docs/findings.md";
}

TEST(DiagnoseRules, EveryFindingARuleEmitsIsInTheTable) {
  const auto ids = finding_ids();
  for (const auto& evidence : {starved_on_fuse(), healthy_local(), cpu_bound(), bursty(), starved_on_saturated_fuse()}) {
    for (const auto& f : evaluate_rules(evidence)) {
      EXPECT_NE(std::find(ids.begin(), ids.end(), f.id), ids.end()) << f.id;
    }
  }
}

}  // namespace
}  // namespace gpufeed
