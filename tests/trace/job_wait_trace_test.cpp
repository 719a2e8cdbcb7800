// tune's data-wait metric against the real kernel and a real PyTorch job:
// each --exec trial traces the job's loop with eBPF and counts the batches
// its waits for data end (tune/wait_metric.hpp). Needs root, BTF and
// python3-torch; each test skips with its reason where the machine lacks
// something.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <iostream>
#include <regex>

#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/python_fixtures.hpp"
#include "support/ebpf_host.hpp"
#include "support/cli_runner.hpp"
#include "support/schema_validator.hpp"
#include "support/temp_dir.hpp"
#include "tune_trials.hpp"

namespace gpufeed {
namespace {

using testing::TempDir;

const std::string kPython = "/usr/bin/python3";
std::string fixture_script(const std::string& name) { return std::string(GPUFEED_SOURCE_DIR) + "/tests/fixtures/" + name; }

class TuneDataWait : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::ebpf_unavailable_reason()) GTEST_SKIP() << *why;
    if (auto why = testing::torch_unavailable_reason()) GTEST_SKIP() << *why;
    dataset_ = testing::shared_jpeg_dataset();
    ASSERT_NE(dataset_, nullptr) << "tests/fixtures/make_dataset.py failed";
  }
  // The PIL job: one worker decodes about 5 ms per image on this project's
  // VM, so 8 images a batch starve a 20 ms step; two workers nearly feed it.
  static std::string job(double seconds, const std::string& start_method = "fork") {
    return kPython + " " + fixture_script("slow_job.py") + " --data " + dataset_->path().string() +
           " --workers {num_workers} --prefetch {prefetch_factor} --batch-size 8 --step-ms 20 --decode pil "
           "--persistent --start-method " + start_method + " --duration " + std::to_string(seconds);
  }
  // One trial's traced figure against the one the same run printed.
  static double traced_over_printed(const tune::Trial& t) {
    std::smatch m;
    if (!std::regex_search(t.note, m, std::regex("the job printed ([0-9.]+) samples/s"))) return 0;
    return t.samples_per_s / std::stod(m[1].str());
  }
  static inline const TempDir* dataset_ = nullptr;
};

TEST_F(TuneDataWait, TheTracedFigureMatchesWhatTheJobPrints) {
  // One run measured both ways: its loop's waits traced, and the job's own
  // whole-run figure (printed on SIGTERM), which the trial's note quotes.
  // Two separate runs would not do: on a noisy host one run of the job
  // can be twice as fast as the next.
  std::atomic<bool> stop{false};
  cli::ExecTrialRunner traced(cli::ExecTrialSetup{job(30), "samples/s: ([0-9.]+)", 8, &stop, 1, 0, true, 20.0});
  for (int workers : {1, 2}) {
    const tune::Trial t = traced.run(tune::Candidate{workers, 8, true}, tune::TrialLength{300, 8});
    ASSERT_TRUE(t.ok) << t.note;
    const double ratio = traced_over_printed(t);
    std::cout << "[ measured ] " << workers << " worker(s): traced " << t.samples_per_s << " samples/s (x" << ratio
              << " of what it printed); " << t.note << "\n";
    // A count by the wrong step (every gap two steps, read as one) is off
    // by half; the two windows differ by the job's first seconds.
    EXPECT_NEAR(ratio, 1.0, 0.15) << t.note;
    EXPECT_GT(t.starvation, 0.02) << "a 20 ms step outruns " << workers << " PIL worker(s): the loop waits";
    EXPECT_LT(t.starvation, 0.9);
  }
}

TEST_F(TuneDataWait, UnderForkserverTheLoopIsTheForkServersParent) {
  // The workers' parent is the fork server, a child of the loop beside
  // multiprocessing's resource tracker: tracing the fork server would see
  // no waits for data at all.
  std::atomic<bool> stop{false};
  cli::ExecTrialRunner traced(
      cli::ExecTrialSetup{job(30, "forkserver"), "samples/s: ([0-9.]+)", 8, &stop, 1, 0, true, 20.0});
  const tune::Trial t = traced.run(tune::Candidate{2, 8, true}, tune::TrialLength{300, 8});
  ASSERT_TRUE(t.ok) << t.note;
  const double ratio = traced_over_printed(t);
  std::cout << "[ measured ] forkserver, 2 workers: traced " << t.samples_per_s << " samples/s (x" << ratio
            << " of what it printed); " << t.note << "\n";
  EXPECT_NEAR(ratio, 1.0, 0.15) << t.note;
}

TEST_F(TuneDataWait, TuneAndCheckMeasureAJobThatPrintsNothing) {
  TempDir dir;
  const auto config = dir / "config.json";
  // The job's output goes nowhere: only its trace can tell its throughput.
  const std::string silent = job(20) + " >/dev/null";
  const auto r = testing::run_cli({"tune", "--data", dataset_->path().string(), "--batch-size", "8", "--step-ms", "20",
                                   "--max-workers", "2", "--trial-seconds", "6", "--first-round-seconds", "3",
                                   "--exec", silent, "--metric", "data-wait", "--out", config.string()});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  std::ifstream in(config);
  const auto doc = nlohmann::json::parse(in);
  EXPECT_EQ(testing::schema_errors("config", doc), "");
  EXPECT_EQ(doc["workload"]["metric"], "data-wait");
  EXPECT_TRUE(doc["workload"]["metric_regex"].is_null());
  // The job's step as its trials timed it (20 ms of sleep and the loop's
  // own work per batch), kept for check to price a fed loop by.
  ASSERT_TRUE(doc["workload"]["data_wait_step_ms"].is_number()) << doc["workload"].dump();
  EXPECT_GE(doc["workload"]["data_wait_step_ms"].get<double>(), 19.0);
  EXPECT_LE(doc["workload"]["data_wait_step_ms"].get<double>(), 40.0);
  int measured = 0;
  for (const auto& t : doc["search"]["trials"]) {
    if (!t["ok"].get<bool>()) continue;
    ++measured;
    // The job runs 2 cores' worth of PIL at most: no figure above the 20 ms
    // step's 400 samples/s, and never none.
    EXPECT_GT(t["samples_per_s"].get<double>(), 50) << t.dump();
    EXPECT_LT(t["samples_per_s"].get<double>(), 420) << t.dump();
  }
  EXPECT_GE(measured, 2) << r.out;
  // check re-measures the config the same way (a wide tolerance: this
  // checks the path, not the machine's noise).
  // check runs no command from the config: the job is given again.
  const auto c = testing::run_cli({"check", "--config", config.string(), "--tolerance", "0.5", "--json", "-", "--exec",
                                   doc["workload"]["exec"].get<std::string>()});
  EXPECT_EQ(c.code, 0) << c.err << c.out;
}

}  // namespace
}  // namespace gpufeed
