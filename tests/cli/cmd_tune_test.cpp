// `gpufeed tune` and `gpufeed check` through the CLI and the binary:
// simulate from profiles, the built-in and --exec targets on small real runs,
// the config's schema and Python snippet, check's pass and fail paths, the
// trial time bound and Ctrl-C.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "support/cli_runner.hpp"
#include "support/schema_validator.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

using testing::read_file;
using testing::run_cli;
using testing::schema_errors;
using testing::TempDir;

nlohmann::json load(const std::filesystem::path& p) { return nlohmann::json::parse(read_file(p)); }

// Exited: no such process, or a zombie waiting for init to reap it (the
// process was killed; its parent, the trial's shell, is gone).
bool gone(int pid) {
  for (int i = 0; i < 50; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    const auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Fast trials: a synthetic store with a 4 ms read, a 2 ms step.
std::vector<std::string> quick_tune(const std::filesystem::path& out) {
  return {"tune", "--data", "synthetic:memory,samples=4000,size=2KiB,read-ms=4,sigma=0", "--batch-size", "4",
          "--step-ms", "2", "--trial-seconds", "1", "--first-round-seconds", "0.5", "--measure-seconds", "0.3",
          "--max-workers", "8", "--device", "host", "--out", out.string()};
}

TEST(TuneCli, SimulateFromProfilesWritesAValidConfig) {
  TempDir dir;
  const auto out = dir / "sim.json";
  const auto r = run_cli({"tune", "--simulate", "--profile", "h100-8", "--profile", "imagenet-resnet50", "--out",
                          out.string(), "--emit", "python"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = load(out);
  EXPECT_EQ(schema_errors("config", doc), "");
  EXPECT_EQ(doc["search"]["mode"], "simulate");
  EXPECT_EQ(doc["ranks"].size(), 8u);
  EXPECT_GE(doc["dataloader"]["num_workers"].get<int>(), 2);
  EXPECT_NE(r.out.find("DATALOADER_KWARGS"), std::string::npos);
  // The snippet is Python that runs (no torch needed for the definitions).
  const auto snippet = dir.write("snippet.py", r.out.substr(r.out.find("# DataLoader settings")));
  const std::string cmd = "/usr/bin/python3 -c \"exec(open('" + snippet.string() +
                          "').read().split('  config written')[0]); print(DATALOADER_KWARGS['num_workers'])\" > " +
                          (dir / "py.out").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << read_file(dir / "py.out");
  // The helper module loads it and drives a real DataLoader with it.
  const std::string helper = "GPUFEED_CONFIG_UNDER_TEST=" + out.string() + " /usr/bin/python3 " +
                             GPUFEED_SOURCE_DIR + "/python/test_gpufeed_config.py > " + (dir / "helper.out").string() +
                             " 2>&1";
  EXPECT_EQ(std::system(helper.c_str()), 0) << read_file(dir / "helper.out");
}

TEST(TuneCli, SimulateRefusesMissingOrWrongProfiles) {
  EXPECT_EQ(run_cli({"tune", "--simulate", "--profile", "h100-8"}).code, 2);
  const auto r = run_cli({"tune", "--simulate", "--profile", "h100-8", "--profile", "no-such-profile"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no-such-profile"), std::string::npos);
}

TEST(TuneCli, BuiltinTargetPicksEnoughWorkersAndRecordsItsTrials) {
  TempDir dir;
  const auto out = dir / "config.json";
  auto args = quick_tune(out);
  args.insert(args.end(), {"--crop", "whole"});  // recorded for check (with --decode none it changes no work)
  const auto r = run_cli(args);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  for (const char* phase : {"[1/5] budget", "[2/5] measure", "[3/5] model", "[4/5] verify", "[5/5] choose"}) {
    EXPECT_NE(r.out.find(phase), std::string::npos) << phase;
  }
  const auto doc = load(out);
  EXPECT_EQ(schema_errors("config", doc), "");
  // Demand: 4 samples per 2 ms step = 2000/s; a worker supplies 250/s: the
  // step needs 8 workers, the most allowed. Fewer would starve it.
  EXPECT_GE(doc["dataloader"]["num_workers"].get<int>(), 6);
  EXPECT_FALSE(doc["search"]["trials"].empty());
  EXPECT_GT(doc["prediction"]["samples_per_s"].get<double>(), 0);
  EXPECT_LT(doc["search"]["wall_s"].get<double>(), doc["search"]["grid_equivalent_s"].get<double>());
  EXPECT_EQ(doc["workload"]["crop"], "whole");
  // The interval brackets the prediction, and the report and the config say what set its width.
  const auto& p = doc["prediction"];
  EXPECT_LE(p["interval"][0].get<double>(), p["samples_per_s"].get<double>());
  EXPECT_GE(p["interval"][1].get<double>(), p["samples_per_s"].get<double>());
  const auto because = p["interval_because"].get<std::string>();
  EXPECT_FALSE(because.empty());
  EXPECT_NE(r.out.find(because), std::string::npos) << r.out;
}

// The built-in trials time each sample's transform; where that is real CPU
// work the model's final figures use it (cpu_from_trials.hpp), and the
// config records each trial's figure. Storage-bound work is left alone.
TEST(TuneCli, TheTrialsCpuPerSampleFeedsTheFinalModel) {
  TempDir dir;
  const auto out = dir / "config.json";
  auto args = quick_tune(out);
  args[2] = "synthetic:memory,samples=4000,size=2KiB,read-ms=0.1,sigma=0";
  args.insert(args.end(), {"--cpu-us", "500"});
  const auto r = run_cli(args);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const std::string line = "CPU per sample in the trials: ";
  const auto at = r.out.find(line);
  ASSERT_NE(at, std::string::npos) << r.out;
  const double one = std::stod(r.out.substr(at + line.size()));
  EXPECT_GT(one, 0.3) << "500 us of spinning per sample";
  EXPECT_LT(one, 5.0);
  const auto doc = load(out);
  EXPECT_EQ(schema_errors("config", doc), "");
  for (const auto& t : doc["search"]["trials"]) {
    if (!t["ok"].get<bool>()) continue;
    EXPECT_GT(t["transform_ms"].get<double>(), 0.3) << t.dump();
    EXPECT_GT(t["transform_samples"].get<int>(), 0) << t.dump();
  }
  const auto storage_bound = run_cli(quick_tune(dir / "storage.json"));
  ASSERT_EQ(storage_bound.code, 0) << storage_bound.err;
  EXPECT_EQ(storage_bound.out.find(line), std::string::npos) << storage_bound.out;
}

// --from: the step comes from a diagnosis of the real job. An 8 ms step of
// 4 samples needs 500/s: two 250/s workers, not the eight a 2 ms step needs.
std::vector<std::string> without_step(std::vector<std::string> args) {
  const auto it = std::find(args.begin(), args.end(), "--step-ms");
  args.erase(it, it + 2);
  return args;
}

std::string diagnosis_with_step(const std::string& loop_step, const std::string& workers = "null") {
  return R"({"schema": "gpufeed.diagnosis/v1", "evidence": {"loop_step": )" + loop_step + R"(, "workers": )" +
         workers + "}}";
}

TEST(TuneCli, FromDiagnosisTakesTheLoopStep) {
  TempDir dir;
  const auto out = dir / "cfg.json";
  const auto diag = dir.write("d.json", diagnosis_with_step(R"({"median_ms": 8.0, "spread_ms": 0.5, "p10_ms": 7.4,
      "p90_ms": 8.6, "cycles": 120, "unavailable": null})"));
  auto args = without_step(quick_tune(out));
  args.insert(args.end(), {"--from", diag.string()});
  const auto r = run_cli(args);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("between the loop's data waits over 120 cycles"), std::string::npos) << r.out;
  const auto doc = load(out);
  EXPECT_EQ(schema_errors("config", doc), "");
  EXPECT_EQ(doc["workload"]["step_ms"], "8.000:0.500");
  EXPECT_NE(doc["workload"]["step"].get<std::string>().find("from " + diag.string()), std::string::npos);
  EXPECT_GE(doc["dataloader"]["num_workers"].get<int>(), 2);
  EXPECT_LE(doc["dataloader"]["num_workers"].get<int>(), 4);
  EXPECT_EQ(doc["workload"]["cpu_us"], 0) << "no worker figures in the diagnosis: nothing added";
  EXPECT_EQ(doc["workload"]["step_cpu_ms"], 0);
}

// The job's workers spent 2 ms of CPU per file and its loop 0.5 ms: model
// and trials pay both, and the config records the workers' for check.
TEST(TuneCli, FromDiagnosisAddsTheWorkersCpuPerSample) {
  TempDir dir;
  const auto out = dir / "cfg.json";
  auto content = nlohmann::json::parse(diagnosis_with_step(R"({"median_ms": 8.0, "spread_ms": 0.5, "cycles": 120})",
                                                           R"({"cpu_s": 0.2, "files_opened": 100})"));
  // The loop process spent 0.05 s over those 100 samples: 2 ms per batch of 4.
  content["evidence"]["processes"] = nlohmann::json::parse(R"([{"role": "loop", "cpu_s": 0.05},
      {"role": "worker", "cpu_s": 0.1}])");
  const auto diag = dir.write("d.json", content.dump());
  auto args = without_step(quick_tune(out));
  args.insert(args.end(), {"--from", diag.string()});
  const auto r = run_cli(args);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("the job's workers spent 2.00 ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("loop CPU per batch: 2.00 ms of the 8.00 ms step"), std::string::npos) << r.out;
  const auto doc = load(out);
  EXPECT_EQ(schema_errors("config", doc), "");
  EXPECT_GT(doc["workload"]["cpu_us"].get<double>(), 1900);
  EXPECT_LE(doc["workload"]["cpu_us"].get<double>(), 2000);
  // 6 ms a sample per worker (4 read + 2 CPU) for 500/s: at least 3 workers.
  EXPECT_GE(doc["dataloader"]["num_workers"].get<int>(), 3);
  // check re-runs the trial: 2 ms of loop CPU spun, then 6 ms slept.
  EXPECT_EQ(doc["workload"]["step_cpu_ms"], 2.0);
  EXPECT_EQ(doc["workload"]["step_ms"], "6.000:0.500");
}

TEST(TuneCli, FromDiagnosisRefusesWhatItCannotUse) {
  TempDir dir;
  const auto out = dir / "cfg.json";
  auto with_from = [&](const std::string& content, bool keep_step = false) {
    const auto diag = dir.write("d.json", content);
    auto args = keep_step ? quick_tune(out) : without_step(quick_tune(out));
    args.insert(args.end(), {"--from", diag.string()});
    return run_cli(args);
  };
  const auto fed = with_from(diagnosis_with_step(R"({"median_ms": null, "spread_ms": null, "p10_ms": null,
      "p90_ms": null, "cycles": 3, "unavailable": "only 3 waits for data between steps were seen"})"));
  EXPECT_EQ(fed.code, 2);
  EXPECT_NE(fed.err.find("no step estimate: only 3 waits"), std::string::npos) << fed.err;
  EXPECT_NE(fed.err.find("--step-ms"), std::string::npos) << fed.err;
  const auto other = with_from(R"({"schema": "gpufeed.config/v1"})");
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.err.find("not a gpufeed.diagnosis/v1 document"), std::string::npos) << other.err;
  EXPECT_EQ(with_from("not json").code, 2);
  auto missing = without_step(quick_tune(out));
  missing.insert(missing.end(), {"--from", (dir / "none.json").string()});
  const auto none = run_cli(missing);
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("--from: diagnosis " + (dir / "none.json").string() + " does not exist"), std::string::npos)
      << none.err;
  const auto both = with_from(diagnosis_with_step(R"({"median_ms": 8.0})"), /*keep_step=*/true);
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("--from and --step-ms"), std::string::npos) << both.err;
  EXPECT_FALSE(std::filesystem::exists(out)) << "no config from a refused request";
}

TEST(TuneCli, ExecTargetRunsTheJobPerTrialAndReadsItsMetric) {
  TempDir dir;
  const auto out = dir / "config.json";
  // A "job" whose throughput peaks at 4 workers and prefetch does not matter.
  const auto job = dir.write("job.sh", "w=$1\nif [ $w -gt 4 ]; then r=$((400 - w)); else r=$((w * 100)); fi\n"
                                       "echo \"epoch 1 samples/s: $r\"\n");
  auto args = quick_tune(out);
  args.insert(args.end(), {"--exec", "sh " + job.string() + " {num_workers} {prefetch_factor}", "--search", "grid"});
  const auto r = run_cli(args);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto doc = load(out);
  EXPECT_EQ(doc["dataloader"]["num_workers"], 4);
  // Equals whose prefetch memory is free (batches of a few KiB): the deepest.
  EXPECT_EQ(doc["dataloader"]["prefetch_factor"], 8) << doc["search"]["reason"];
  EXPECT_NE(doc["search"]["reason"].get<std::string>().find("prefetch 8 rather than 1"), std::string::npos)
      << doc["search"]["reason"];
  EXPECT_EQ(doc["workload"]["target"], "exec");
  EXPECT_EQ(doc["search"]["trials"].size(), 6u * 4u + 1)
      << "grid: workers 1,2,3,4,6,8 x prefetch 1,2,4,8, and the chosen config's repeat for its interval";
}

// quick_tune with `--exec` running `script` under sh ({num_workers} as $1),
// at most `max_workers`, and full trials of `trial_seconds` and a short
// round of `first_round_seconds` when given.
std::vector<std::string> exec_tune(const TempDir& dir, const std::string& script, const std::string& max_workers,
                                   const std::string& trial_seconds = "", const std::string& first_round_seconds = "") {
  const auto job = dir.write("job.sh", script);
  auto args = quick_tune(dir / "config.json");
  const auto set = [&args](const char* flag, const std::string& value) {
    if (!value.empty()) *(std::find(args.begin(), args.end(), flag) + 1) = value;
  };
  set("--max-workers", max_workers);
  set("--trial-seconds", trial_seconds);
  set("--first-round-seconds", first_round_seconds);
  args.insert(args.end(), {"--exec", "sh " + job.string() + " {num_workers}"});
  return args;
}

TEST(TuneCli, ExecTrialsAreTimeBoundAndStopTheJobsChildren) {
  TempDir dir;
  const auto pids = dir / "pids";
  // Prints its metric, then hangs with a child: both must be gone after each trial.
  const auto args = exec_tune(dir,
                              "sleep 300 & echo $! >> " + pids.string() + "\necho $$ >> " + pids.string() +
                                  "\necho \"samples/s: $1\"\nwait\n",
                              "2");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_cli(args);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
  std::ifstream in(pids);
  int pid = 0, count = 0;
  while (in >> pid) {
    ++count;
    EXPECT_TRUE(gone(pid)) << "process " << pid << " outlived its trial";
  }
  EXPECT_GT(count, 0);
}

// A job that needs longer to start than the short round gives it (imports
// from a cold page cache) runs on, up to a full trial's time, to its first
// figure. Like slow_job.py before its first batch, it reports 0 while it
// starts: that is no figure.
TEST(TuneCli, ExecJobSlowerToStartThanTheShortRoundRunsOnToItsFirstFigure) {
  TempDir dir;
  const auto r = run_cli(exec_tune(dir, "echo \"samples/s: 0.0\"\nsleep 1.5\necho \"samples/s: $1\"\n", "2", "3"));
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto doc = load(dir / "config.json");
  int short_ok = 0;
  for (const auto& t : doc["search"]["trials"]) {
    if (t["round"] != 1) continue;
    EXPECT_TRUE(t["ok"].get<bool>()) << t.dump();
    EXPECT_NE(t["note"].get<std::string>().find("ran on to its first"), std::string::npos) << t.dump();
    EXPECT_GT(t["seconds"].get<double>(), 1.4) << "past the 0.5 s short round" << t.dump();
    EXPECT_LT(t["seconds"].get<double>(), 3.0) << "ended with the job, not at the full trial's bound" << t.dump();
    ++short_ok;
  }
  EXPECT_GT(short_ok, 0) << r.out;
  EXPECT_EQ(doc["dataloader"]["num_workers"], 2);
}

// Slower to start than even the first-figure cap: every trial ends for want
// of time, saying the job's figure read only 0, and nothing is chosen.
TEST(TuneCli, ExecJobSlowerToStartThanTheFirstFigureCapFailsEveryTrialForWantOfTime) {
  TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  auto args = exec_tune(dir, "echo \"samples/s: 0.0\"\nsleep 30\necho \"samples/s: $1\"\n", "1", "1.5");
  args.insert(args.end(), {"--first-figure-seconds", "2"});
  const auto r = run_cli(args);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(25)) << "the 30 s sleep was cut short";
  EXPECT_EQ(r.code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find("read only 0"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "config.json"));
}

// A job that prints its figure only when it ends, after longer than the
// trials' caps, works without flags: the first trial runs to its first
// figure, and the later ones are sized from the run it showed.
TEST(TuneCli, ExecJobThatPrintsOnlyAtExitIsRunToItsEnd) {
  TempDir dir;
  const auto r = run_cli(exec_tune(dir, "sleep 1.5\necho \"final samples/s: $(( $1 * 100 ))\"\n", "2", "0.5"));
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto doc = load(dir / "config.json");
  int trials = 0;
  for (const auto& t : doc["search"]["trials"]) {
    EXPECT_TRUE(t["ok"].get<bool>()) << t.dump();
    EXPECT_GT(t["seconds"].get<double>(), 1.4) << "ran to the job's end" << t.dump();
    EXPECT_LT(t["seconds"].get<double>(), 4.0) << t.dump();
    ++trials;
  }
  EXPECT_GT(trials, 1);
  EXPECT_EQ(doc["dataloader"]["num_workers"], 2);
}

// A job that runs {steps} batches and reports at its end: once the first
// trial has shown its rate and lead, a trial whose whole warm-up would not
// fit the round's cap asks for fewer warm-up batches, and says so. Each
// batch takes 0.1 s / workers, so the job's figure is 40 samples/s per
// worker whatever it is asked for.
TEST(TuneCli, ExecJobThatReportsAtItsEndIsAskedForWhatFitsTheCap) {
  TempDir dir;
  const auto job = dir.write("job.sh",
                             "sleep $(awk \"BEGIN{print 0.2 + $2 * 0.1 / $1}\")\n"
                             "echo \"final samples/s: $(awk \"BEGIN{print 40 * $1}\")\"\n");
  auto args = quick_tune(dir / "config.json");
  *(std::find(args.begin(), args.end(), "--max-workers") + 1) = "2";
  *(std::find(args.begin(), args.end(), "--first-round-seconds") + 1) = "0.6";
  args.insert(args.end(), {"--short-steps", "2", "--trial-steps", "4", "--exec",
                           "sh " + job.string() + " {num_workers} {steps}"});
  const auto r = run_cli(args);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto doc = load(dir / "config.json");
  const auto& trials = doc["search"]["trials"];
  ASSERT_GT(trials.size(), 2u) << r.out;
  int cut = 0;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const auto& t = trials[i];
    EXPECT_TRUE(t["ok"].get<bool>()) << t.dump();
    const int w = t["num_workers"], p = t["prefetch_factor"];
    const int steps = t["round"] == 1 ? 2 : 4;
    const double all_s = 0.2 + (w * p + steps) * 0.1 / w;
    const bool asked_fewer = t["note"].get<std::string>().find("asked for") != std::string::npos;
    // The first trial knows nothing of the job's rate: what it asks for
    // comes from the model, and says so.
    if (i == 0 && asked_fewer) {
      EXPECT_NE(t["note"].get<std::string>().find("at the model's"), std::string::npos) << t.dump();
    }
    if (i > 0) EXPECT_EQ(t["note"].get<std::string>().find("at the model's"), std::string::npos) << t.dump();
    if (!asked_fewer) continue;
    ++cut;
    EXPECT_LT(t["seconds"].get<double>(), all_s) << t.dump();
    EXPECT_NEAR(t["samples_per_s"].get<double>(), 40.0 * w, 1e-6) << t.dump();
  }
  EXPECT_GT(cut, 0) << "a trial of prefetch 4 or 8 holds a warm-up of 8-16 x 0.05 s, over the 0.6 s short round: "
                    << trials.dump();
}

// tune --exec on a job of {steps} batches that reports at its end: each
// batch takes 0.5 s / workers, and `after` runs once it has printed its
// figure. Prefetch 8 on 2 workers is 16 warm-up batches, 4 s of the job,
// over the 3 s cap: a trial of it is sized once the job's rate is known.
nlohmann::json end_of_run_trials(TempDir& dir, const std::string& after) {
  const auto job = dir.write("job.sh",
                             "sleep $(awk \"BEGIN{print 0.2 + $2 * 0.5 / $1}\")\n"
                             "echo \"final samples/s: $(awk \"BEGIN{print 8 * $1}\")\"\n" +
                                 after + "\n");
  auto args = quick_tune(dir / "config.json");
  *(std::find(args.begin(), args.end(), "--max-workers") + 1) = "2";
  *(std::find(args.begin(), args.end(), "--first-round-seconds") + 1) = "3";
  *(std::find(args.begin(), args.end(), "--trial-seconds") + 1) = "3";
  args.insert(args.end(), {"--short-steps", "2", "--trial-steps", "4", "--exec",
                           "sh " + job.string() + " {num_workers} {steps}"});
  const auto r = run_cli(args);
  EXPECT_EQ(r.code, 0) << r.err << r.out;
  if (r.code != 0) return nlohmann::json::array();
  return load(dir / "config.json")["search"]["trials"];
}

// The trials after the first that were asked for fewer batches: sized by
// the rate the earlier trials showed, not by the model.
int sized_trials(const nlohmann::json& trials) {
  int cut = 0;
  for (std::size_t i = 1; i < trials.size(); ++i) {
    if (trials[i]["note"].get<std::string>().find("asked for") != std::string::npos) ++cut;
  }
  return cut;
}

// A job that reports at its end and then takes a while to shut down (a
// DataLoader's many workers exiting) is left to end by itself, up to the
// round's cap: stopped in its shut-down, it would read as a job that runs
// on, and its later trials would get every warm-up batch.
TEST(TuneCli, ExecJobThatShutsDownSlowlyAfterItsFigureStillEndsByItself) {
  TempDir dir;
  const nlohmann::json trials = end_of_run_trials(dir, "sleep 1.5");
  ASSERT_GT(trials.size(), 1u);
  for (const auto& t : trials) EXPECT_TRUE(t["ok"].get<bool>()) << t.dump();
  EXPECT_GT(sized_trials(trials), 0) << "the first trial's job was stopped in its shut-down: " << trials.dump();
}

// A job that reports at its end and then exits non-zero (its shut-down
// failed) still reports at its end: its later trials are sized, and each
// trial's note says how it exited.
TEST(TuneCli, ExecJobThatFailsAfterItsFigureIsStillSizedAndSaysSo) {
  TempDir dir;
  const nlohmann::json trials = end_of_run_trials(dir, "exit 3");
  ASSERT_GT(trials.size(), 1u);
  for (const auto& t : trials) {
    EXPECT_TRUE(t["ok"].get<bool>()) << t.dump();
    EXPECT_NE(t["note"].get<std::string>().find("exited with status 3 after its figure"), std::string::npos) << t.dump();
  }
  EXPECT_GT(sized_trials(trials), 0) << trials.dump();
}

// A job that prints no figure at all gets one error naming the metric that
// needs none, after its first trial, and no config.
TEST(TuneCli, ExecJobThatPrintsNothingIsOneErrorNamingDataWait) {
  TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_cli(exec_tune(dir, "sleep 0.3\n", "2"));
  EXPECT_EQ(r.code, 2) << r.err << r.out;
  EXPECT_NE(r.err.find("--metric data-wait"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("in its whole run"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20)) << "one trial, not a search of them";
  EXPECT_FALSE(std::filesystem::exists(dir / "config.json"));
}

// A job whose figure falls to 0 by the end of its trial has stalled there:
// a failed trial that says so, not a measured 0.
TEST(TuneCli, ExecJobWhoseMetricFallsToZeroFailsAsStalled) {
  TempDir dir;
  const auto r = run_cli(exec_tune(dir, "echo \"samples/s: $1\"\necho \"samples/s: 0\"\n", "2"));
  EXPECT_EQ(r.code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find("stalled"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "config.json")) << "no config without a measured trial";
}

// A real job of processes: a loop (sh) that prints its figure and starts
// {num_workers} workers that spin. The trials read the workers' CPU from
// /proc: each spins whatever CPU it gets, so the CPU per sample is what the
// workers got over 100 samples/s, and the loop, which mostly sleeps, spends
// far less.
TEST(TuneCli, ExecTrialsReadTheJobsOwnCpuFromItsProcesses) {
  TempDir dir;
  const auto out = dir / "config.json";
  const auto r = run_cli(exec_tune(dir,
                                   "spin() { while :; do :; done; }\n"
                                   "i=0; while [ $i -lt $1 ]; do spin & i=$((i + 1)); done\n"
                                   "while :; do echo \"samples/s: 100\"; sleep 0.2; done\n",
                                   "2", "2", "1.5"));
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("your job's CPU in the trials: its workers"), std::string::npos) << r.out;
  const auto doc = load(out);
  EXPECT_EQ(schema_errors("config", doc), "");
  int measured = 0;
  for (const auto& t : doc["search"]["trials"]) {
    if (!t["ok"].get<bool>() || t["transform_ms"].is_null()) continue;
    ++measured;
    // One spinning worker on a core of its own: 1 s of CPU a second over
    // 100 samples, 10 ms each; a busy machine gives it less, never more.
    const double per_worker = t["transform_ms"].get<double>() / t["num_workers"].get<int>();
    EXPECT_GT(per_worker, 1.0) << t.dump();
    EXPECT_LT(per_worker, 12.0) << t.dump();
    // The loop sleeps: its CPU per batch is far under the workers' per batch
    // (quick_tune's batch of 4), and none at all reads as null.
    const double loop = t["loop_cpu_ms"].is_null() ? 0.0 : t["loop_cpu_ms"].get<double>();
    constexpr int kBatch = 4;
    EXPECT_LT(loop, t["transform_ms"].get<double>() * kBatch / 2) << t.dump();
  }
  EXPECT_GE(measured, 2) << r.out;
}

// A job that ends by itself stops its workers first and runs on a little
// (here: a helper child in their place, as a launcher's cleanup would be).
// The trials' CPU comes from the last look at the job while its workers ran:
// a look after they stopped would lose their CPU, or price the helper as
// the workers.
TEST(TuneCli, ExecTrialsOfAJobThatEndsByItselfKeepItsWorkersCpu) {
  TempDir dir;
  const auto out = dir / "config.json";
  const auto r = run_cli(exec_tune(dir,
                                   "spin() { while :; do :; done; }\n"
                                   "i=0; pids=''; while [ $i -lt $1 ]; do spin & pids=\"$pids $!\"; i=$((i + 1)); done\n"
                                   "n=0; while [ $n -lt 12 ]; do echo \"samples/s: 4\"; sleep 0.2; n=$((n + 1)); done\n"
                                   "kill $pids; wait 2>/dev/null\n"
                                   "sleep 2.5\n"
                                   "echo \"samples/s: 4\"\n",
                                   "2", "30", "30"));
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto doc = load(out);
  int measured = 0;
  for (const auto& t : doc["search"]["trials"]) {
    if (!t["ok"].get<bool>() || t["transform_ms"].is_null()) continue;
    ++measured;
    const double per_worker = t["transform_ms"].get<double>() / t["num_workers"].get<int>();
    // At 4 samples/s (slow enough that every trial waits for the job to
    // end) a spinning worker on a core of its own spends 250 ms a sample.
    EXPECT_GT(per_worker, 25.0) << "the stopped workers' CPU was lost: " << t.dump();
    EXPECT_LT(per_worker, 300.0) << t.dump();
  }
  EXPECT_GE(measured, 2) << r.out;
}

TEST(TuneCli, BadRequestsAreUsageErrors) {
  EXPECT_EQ(run_cli({"tune", "--batch-size", "4"}).code, 2) << "no --data";
  EXPECT_EQ(run_cli({"tune", "--data", "synthetic:memory", "--search", "random"}).code, 2);
  EXPECT_EQ(run_cli({"tune", "--data", "synthetic:memory", "--exec", "train.py --workers 4"}).code, 2);
  EXPECT_EQ(run_cli({"tune", "--data", "synthetic:memory", "--exec", "x {num_workers} {gpus}"}).code, 2);
  EXPECT_EQ(run_cli({"tune", "--data", "synthetic:memory", "--exec", "x {num_workers}", "--metric-regex", "("}).code, 2);
  EXPECT_EQ(run_cli({"tune", "--data", "synthetic:memory", "--emit", "rust"}).code, 2);
  // --metric data-wait traces an --exec job; it gives the figure, not a regex.
  const auto no_exec = run_cli({"tune", "--data", "synthetic:memory", "--metric", "data-wait"});
  EXPECT_EQ(no_exec.code, 2);
  EXPECT_NE(no_exec.err.find("it needs --exec"), std::string::npos) << no_exec.err;
  EXPECT_EQ(run_cli({"tune", "--data", "synthetic:memory", "--exec", "x {num_workers}", "--metric", "data-wait",
                     "--metric-regex", "rate ([0-9]+)"}).code, 2);
  const auto metric = run_cli({"tune", "--data", "synthetic:memory", "--exec", "x {num_workers}", "--metric", "log"});
  EXPECT_EQ(metric.code, 2);
  EXPECT_NE(metric.err.find("use output or data-wait"), std::string::npos) << metric.err;
  const auto crop = run_cli({"tune", "--data", "synthetic:memory", "--crop", "full"});
  EXPECT_EQ(crop.code, 2);
  EXPECT_NE(crop.err.find("--crop"), std::string::npos) << crop.err;
  for (const char* option : {"--trial-seconds", "--first-round-seconds", "--measure-seconds"}) {
    const auto r = run_cli({"tune", "--data", "synthetic:memory", option, "-1"});
    EXPECT_EQ(r.code, 2) << option;
    EXPECT_NE(r.err.find(std::string(option) + " -1: must be more than 0"), std::string::npos) << r.err;
  }
}

class CheckCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto r = run_cli(quick_tune(config_));
    ASSERT_EQ(r.code, 0) << r.err;
  }
  std::filesystem::path edited(const std::function<void(nlohmann::json&)>& edit) {
    auto doc = load(config_);
    edit(doc);
    const auto path = dir_ / "edited.json";
    std::ofstream(path) << doc.dump();
    return path;
  }
  TempDir dir_;
  std::filesystem::path config_ = dir_ / "config.json";
};

TEST_F(CheckCli, PassesOnTheMachineItWasTunedOn) {
  const auto r = run_cli({"check", "--config", config_.string(), "--seconds", "2", "--tolerance", "0.3", "--json", "-"});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(schema_errors("check", doc), "");
  EXPECT_EQ(doc["verdict"], "pass");
  EXPECT_GT(doc["measured_samples_per_s"].get<double>(), 0);
}

TEST_F(CheckCli, FailsWhenTooSlowForThePrediction) {
  const auto path = edited([](nlohmann::json& d) { d["prediction"]["samples_per_s"] = 1e9; });
  const auto r = run_cli({"check", "--config", path.string(), "--seconds", "1"});
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.out.find("FAIL  throughput"), std::string::npos) << r.out;
}

TEST_F(CheckCli, FailsWhenTheConfigDoesNotFitTheMachine) {
  const auto path = edited([](nlohmann::json& d) { d["dataloader"]["num_workers"] = 4096; });
  const auto r = run_cli({"check", "--config", path.string(), "--seconds", "1"});
  EXPECT_EQ(r.code, 4);
  EXPECT_NE(r.err.find("check failed (workers)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("this machine allows"), std::string::npos) << r.err;
}

// check opens the config's store through the same registry as bench and
// tune, so it takes the same store options, and refuses them for another kind.
TEST_F(CheckCli, TakesTheStoreOptionsAndRefusesThemForAnotherKindOfStore) {
  const auto r = run_cli({"check", "--config", config_.string(), "--seconds", "1", "--s3-region", "eu-west-1"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--s3-* options apply to s3://bucket/prefix data only"), std::string::npos) << r.err;
}

TEST_F(CheckCli, FailsOnAnUnknownSchemaVersion) {
  const auto path = edited([](nlohmann::json& d) { d["schema"] = "gpufeed.config/v9"; });
  const auto r = run_cli({"check", "--config", path.string()});
  EXPECT_EQ(r.code, 4);
  EXPECT_NE(r.err.find("gpufeed.config/v9"), std::string::npos) << r.err;
}

// tune --pytorch-probe's trials scaled each sample's CPU: check pays the
// same, and refuses a scale no tune writes.
TEST_F(CheckCli, ReadsTheTrialsCpuScaleAndRefusesOneOutOfRange) {
  EXPECT_EQ(load(config_)["workload"]["cpu_scale"], 1) << "no --pytorch-probe: nothing scaled";
  const auto scaled = edited([](nlohmann::json& d) { d["workload"]["cpu_scale"] = 1.5; });
  EXPECT_EQ(schema_errors("config", load(scaled)), "");
  const auto ok = run_cli({"check", "--config", scaled.string(), "--seconds", "1", "--tolerance", "0.99"});
  EXPECT_EQ(ok.code, 0) << ok.err << ok.out;
  const auto bad = edited([](nlohmann::json& d) { d["workload"]["cpu_scale"] = 0.5; });
  const auto r = run_cli({"check", "--config", bad.string(), "--seconds", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("workload.cpu_scale 0.5 is out of range"), std::string::npos) << r.err;
}

TEST(CheckCliInput, AMissingOrBrokenConfigIsAUsageError) {
  TempDir dir;
  EXPECT_EQ(run_cli({"check", "--config", (dir / "none.json").string()}).code, 2);
  const auto broken = dir.write("broken.json", "{ not json");
  EXPECT_EQ(run_cli({"check", "--config", broken.string()}).code, 2);
}

TEST(TuneBinary, CtrlCWritesTheBestConfigSoFar) {
  TempDir dir;
  const auto out = dir / "config.json";
  const auto job = dir.write("job.sh", "sleep 0.3; echo \"samples/s: $(( $1 * 10 ))\"\n");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen((dir / "stdout").c_str(), "w", stdout);
    freopen((dir / "stderr").c_str(), "w", stderr);
    execl(GPUFEED_BINARY, GPUFEED_BINARY, "tune", "--data", "synthetic:memory,samples=1000,size=1KiB", "--batch-size",
          "4", "--measure-seconds", "0.2", "--search", "grid", "--trial-seconds", "5", "--exec",
          ("sh " + job.string() + " {num_workers}").c_str(), "--out", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until a few trials are done, then interrupt.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (read_file(dir / "stdout").find("full  3 workers") != std::string::npos) break;
  }
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << read_file(dir / "stderr");
  EXPECT_EQ(WEXITSTATUS(status), 0) << read_file(dir / "stderr");
  const auto doc = load(out);
  EXPECT_EQ(schema_errors("config", doc), "");
  EXPECT_EQ(doc["search"]["partial"], true);
  EXPECT_LT(doc["search"]["trials"].size(), 24u);
}

}  // namespace
}  // namespace gpufeed
