// gpufeed diagnose against the real kernel: eBPF programs loaded and detached,
// real processes traced, a real PyTorch DataLoader job on the FUSE fixture.
// Needs root and BTF; each test skips with its reason where the machine lacks
// something. Tests of this suite run one at a time (RUN_SERIAL), so counting
// gpufeed's BPF programs is not confused by another test's.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "gpufeed/tune/from_diagnosis.hpp"
#include "support/child_process.hpp"
#include "support/ebpf_host.hpp"
#include "support/latencyfs_mount.hpp"
#include "support/python_fixtures.hpp"
#include "support/schema_validator.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

using nlohmann::json;
using testing::ChildProcess;
using testing::kPython;
using testing::stat_loop_job;
using testing::TempDir;

json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

const json* finding(const json& doc, const std::string& id) {
  for (const auto& f : doc["findings"]) {
    if (f["id"] == id) return &f;
  }
  return nullptr;
}

class Diagnose : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::ebpf_unavailable_reason()) GTEST_SKIP() << *why;
    ASSERT_TRUE(testing::loaded_bpf_programs("gf_", 5).empty()) << "gpufeed programs loaded before the test";
  }
  std::unique_ptr<ChildProcess> gpufeed(std::vector<std::string> args) {
    args.insert(args.begin(), GPUFEED_BINARY);
    return std::make_unique<ChildProcess>(args, dir_ / "gpufeed.out");
  }
  std::string output() { return testing::read_file(dir_ / "gpufeed.out"); }
  void expect_detached() { EXPECT_TRUE(testing::loaded_bpf_programs("gf_", 5).empty()) << "BPF programs left loaded"; }

  TempDir dir_;
};

TEST_F(Diagnose, LaunchedCommandIsTracedFromTheStartAndItsExitCodeReturned) {
  auto g = gpufeed({"diagnose", "--duration", "20", "--json", (dir_ / "d.json").string(), "--", kPython, "-c",
                    "import os, sys\nfor _ in range(1000): os.stat('/etc/hostname')\nsys.exit(3)"});
  auto code = g->wait(60);
  ASSERT_TRUE(code) << "gpufeed did not finish";
  EXPECT_EQ(*code, 3) << output();
  json doc = read_json(dir_ / "d.json");
  EXPECT_EQ(testing::schema_errors("diagnosis", doc), "");
  EXPECT_EQ(doc["launched"], true);
  EXPECT_EQ(doc["command_exit_code"], 3);
  EXPECT_EQ(doc["end_reason"], "target exited");
  std::uint64_t stats = 0;
  for (const auto& s : doc["evidence"]["syscalls"]) {
    if (s["role"] == "loop" && s["syscall"] == "newfstatat" && s["kind"] == "path") stats += s["count"].get<std::uint64_t>();
  }
  EXPECT_GE(stats, 1000U);  // every stat, from the first instruction on
  expect_detached();
}

// Kernels without task-local storage keep calls in flight in a hash by
// thread id (bpf/diagnose.bpf.c): the same calls are seen and timed.
TEST_F(Diagnose, HashFallbackForCallsInFlightSeesEveryCallToo) {
  std::vector<std::string> args = {"/usr/bin/env", "GPUFEED_BPF_STARTS=hash", GPUFEED_BINARY, "diagnose",
                                    "--duration", "20", "--json", (dir_ / "d.json").string(), "--", kPython, "-c",
                                    "import os\nfor _ in range(1000): os.stat('/etc/hostname')"};
  ChildProcess g(args, dir_ / "gpufeed.out");
  auto code = g.wait(60);
  ASSERT_TRUE(code) << "gpufeed did not finish";
  EXPECT_EQ(*code, 0) << output();
  json doc = read_json(dir_ / "d.json");
  std::uint64_t stats = 0;
  for (const auto& s : doc["evidence"]["syscalls"]) {
    if (s["role"] == "loop" && s["syscall"] == "newfstatat" && s["kind"] == "path") stats += s["count"].get<std::uint64_t>();
  }
  EXPECT_GE(stats, 1000U);
  expect_detached();
}

TEST_F(Diagnose, DataWaitMatchesAKnownDutyCycle) {
  // The loop reads items from a producer that makes one every 40 ms and steps
  // 5 ms per item: it waits 35 of every 40 ms, 87.5%, blocked in read(pipe).
  auto g = gpufeed({"diagnose", "--duration", "20", "--json", (dir_ / "d.json").string(), "--", kPython,
                    std::string(GPUFEED_SOURCE_DIR) + "/scripts/demo_job.py", "4"});
  ASSERT_EQ(g->wait(60), 0) << output();
  json doc = read_json(dir_ / "d.json");
  const double wait = doc["evidence"]["data_wait_fraction"].get<double>();
  std::cout << "[ measured ] data wait " << wait << " for a known 0.875\n";
  EXPECT_NEAR(wait, 0.875, 0.05);
  EXPECT_GT(doc["evidence"]["wait_spans_recorded"].get<int>(), 50);  // the spans reach user space
  // Between waits the loop runs its 5 ms step (and a few Python lines).
  const json& step = doc["evidence"]["loop_step"];
  ASSERT_TRUE(step["median_ms"].is_number()) << step.dump();
  std::cout << "[ measured ] loop step " << step["median_ms"] << " ms for a known 5 ms\n";
  EXPECT_NEAR(step["median_ms"].get<double>(), 5.0, 1.0);
  EXPECT_GT(step["cycles"].get<int>(), 50) << step.dump();  // ~100 items in the job's 4 s
  const json* workers = finding(doc, "loader.too-few-workers");
  ASSERT_NE(workers, nullptr);
  // 8 producers would feed it exactly; the advice adds 15% for the tail.
  EXPECT_GE(workers->at("figures")["recommended_num_workers"].get<int>(), 8);
  EXPECT_LE(workers->at("figures")["recommended_num_workers"].get<int>(), 11);
  expect_detached();
}

TEST_F(Diagnose, CommandThatCannotRunIsAUsageError) {
  auto g = gpufeed({"diagnose", "--duration", "5", "--", "/nonexistent/train"});
  EXPECT_EQ(g->wait(30), 2);
  EXPECT_NE(output().find("cannot run '/nonexistent/train'"), std::string::npos) << output();
  expect_detached();
}

TEST_F(Diagnose, WorkersForkedAfterAttachAreTraced) {
  // Forks a short-lived "worker" every 0.3 s, like DataLoader workers re-forked each epoch.
  ChildProcess job({kPython, "-c",
                    "import os, time\n"
                    "while True:\n"
                    "    pid = os.fork()\n"
                    "    if pid == 0:\n"
                    "        for _ in range(300): os.stat('/etc/hostname')\n"
                    "        os._exit(0)\n"
                    "    os.waitpid(pid, 0)\n"
                    "    time.sleep(0.3)\n"},
                   dir_ / "job.out");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto g = gpufeed({"diagnose", "--pid", std::to_string(job.pid()), "--duration", "3", "--json", (dir_ / "d.json").string()});
  ASSERT_EQ(g->wait(30), 0) << output();
  json doc = read_json(dir_ / "d.json");
  int forked_after_attach = 0;
  for (const auto& p : doc["evidence"]["processes"]) {
    if (p["role"] == "worker" && p["first_seen_s"].get<double>() > 0) ++forked_after_attach;
  }
  EXPECT_GE(forked_after_attach, 5);
  std::uint64_t worker_stats = 0;
  for (const auto& s : doc["evidence"]["syscalls"]) {
    if (s["role"] == "worker" && s["syscall"] == "newfstatat") worker_stats += s["count"].get<std::uint64_t>();
  }
  EXPECT_GE(worker_stats, 5U * 300U);
  EXPECT_TRUE(job.running()) << "the traced job was harmed";
  expect_detached();
}

TEST_F(Diagnose, JobExitingDuringTracingStillYieldsAReport) {
  ChildProcess job(stat_loop_job(1.5), dir_ / "job.out");
  auto g = gpufeed({"diagnose", "--pid", std::to_string(job.pid()), "--duration", "30", "--json", (dir_ / "d.json").string()});
  ASSERT_EQ(g->wait(20), 0) << output();
  json doc = read_json(dir_ / "d.json");
  EXPECT_EQ(doc["end_reason"], "target exited");
  EXPECT_LT(doc["evidence"]["window_s"].get<double>(), 10.0);
  expect_detached();
}

// Every way diagnose can end leaves no program loaded and the job running.
struct Ending {
  std::string name;
  bool interrupt;  // SIGINT or SIGTERM (by name) once the window is open
  std::vector<std::string> extra;
  bool bogus_pid;
  int expected_code;
};

void PrintTo(const Ending& e, std::ostream* os) { *os << e.name; }  // readable test names in ctest

class DiagnoseEnding : public Diagnose, public ::testing::WithParamInterface<Ending> {};

TEST_P(DiagnoseEnding, DetachesCleanlyAndLeavesTheJobUnharmed) {
  const Ending& e = GetParam();
  ChildProcess job(stat_loop_job(), dir_ / "job.out");
  std::vector<std::string> args{"diagnose", "--pid", e.bogus_pid ? "999999" : std::to_string(job.pid()), "--json",
                                (dir_ / "d.json").string()};
  args.insert(args.end(), e.extra.begin(), e.extra.end());
  auto g = gpufeed(args);
  if (e.interrupt) {
    // Signalled once diagnose says its window is open, not after a guess at
    // how long attaching takes.
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (output().find("gpufeed: tracing pid") == std::string::npos && std::chrono::steady_clock::now() < limit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_NE(output().find("gpufeed: tracing pid"), std::string::npos) << "diagnose never opened its window\n"
                                                                          << output();
    g->signal(e.name == "sigint" ? SIGINT : SIGTERM);
  }
  auto code = g->wait(30);
  ASSERT_TRUE(code) << "gpufeed hung";
  EXPECT_EQ(*code, e.expected_code) << output();
  if (e.expected_code == 0) {
    json doc = read_json(dir_ / "d.json");
    EXPECT_EQ(doc["end_reason"], e.interrupt ? "interrupted" : "duration");
  } else {
    EXPECT_FALSE(std::filesystem::exists(dir_ / "d.json"));
  }
  EXPECT_TRUE(job.running()) << "the traced job was harmed";
  expect_detached();
}

INSTANTIATE_TEST_SUITE_P(
    Endings, DiagnoseEnding,
    ::testing::Values(Ending{"normal", false, {"--duration", "1.5"}, false, 0},
                      Ending{"sigint", true, {"--duration", "30"}, false, 0},
                      Ending{"sigterm", true, {"--duration", "30"}, false, 0},
                      Ending{"no_such_target", false, {"--duration", "5"}, true, 2},
                      Ending{"bad_option", false, {"--duration", "-1"}, false, 2}),
    [](const ::testing::TestParamInfo<Ending>& p) { return p.param.name; });

// The incident, reproduced: a PyTorch DataLoader job reading ~50 KB JPEGs
// through the latency-injecting FUSE fixture, two workers, a 20 ms step.
class DiagnoseSlowJob : public Diagnose {
 protected:
  void SetUp() override {
    Diagnose::SetUp();
    if (IsSkipped()) return;
    if (auto why = testing::torch_unavailable_reason()) GTEST_SKIP() << *why;
    dataset_ = testing::shared_jpeg_dataset();
    ASSERT_NE(dataset_, nullptr) << "tests/fixtures/make_dataset.py failed";
  }
  json diagnose_job(const std::filesystem::path& data, int workers = 2) {
    auto g = gpufeed({"diagnose", "--duration", "14", "--json", (dir_ / "d.json").string(), "--", kPython,
                      testing::fixture_script("slow_job.py"), "--data", data.string(), "--workers",
                      std::to_string(workers), "--batch-size", "8", "--step-ms", "20", "--stat", "--persistent",
                      "--duration", "13"});
    auto code = g->wait(90);
    EXPECT_TRUE(code) << "gpufeed did not finish";
    EXPECT_EQ(code.value_or(-1), 0) << output();
    return read_json(dir_ / "d.json");
  }

  // The starved loop waits between steps: there it runs the 20 ms step plus
  // what PyTorch's loop costs on top. The two workers' batches often arrive
  // together, so a gap can hold two steps: diagnose tells them apart by
  // one-step gaps, tune --from by the files opened per batch (8 here).
  static void expect_the_jobs_step(const json& doc) {
    const json& step = doc["evidence"]["loop_step"];
    ASSERT_TRUE(step["median_ms"].is_number()) << step.dump();
    const auto job = tune::read_diagnosis(doc, 8);
    ASSERT_TRUE(job.job) << job.error;
    std::cout << "[ measured ] loop step " << job.job->step_ms << " ms for a 20 ms sleep per batch (gaps "
              << step["median_ms"] << " ms, " << step["cycles"] << " gaps holding " << step["steps"] << " steps, "
              << step["ready_fraction"] << " of steps found ready, "
              << job.job->batches_per_wait << " step(s) per gap by files opened: ratio " << job.job->supply_ratio
              << ")\n";
    EXPECT_GE(job.job->step_ms, 19.0) << step.dump();
    EXPECT_LE(job.job->step_ms, 30.0) << step.dump() << " " << doc["evidence"]["workers"].dump();
  }

  static inline const TempDir* dataset_ = nullptr;
};

constexpr double kInjectedStatMs = 20.0;

TEST_F(DiagnoseSlowJob, SlowFuseMetadataIsNamedWithItsLatencyAndMoreWorkersAdvised) {
  if (auto why = testing::LatencyFsMount::unavailable_reason()) GTEST_SKIP() << *why;
  std::filesystem::create_directory(dir_ / "mnt");
  testing::LatencyFsOptions opt;
  opt.lookup_ms = kInjectedStatMs;  // a stat of a file costs one lookup
  opt.open_ms = 5;
  opt.read_ms = 2;
  opt.sigma = 0.5;  // heavy tail: p99 about 3x the median
  testing::LatencyFsMount mount(dataset_->path(), dir_ / "mnt", opt);

  json doc = diagnose_job(mount.path());
  EXPECT_EQ(testing::schema_errors("diagnosis", doc), "");
  EXPECT_EQ(doc["evidence"]["events_dropped"], 0);
  EXPECT_GT(doc["evidence"]["slow_calls_recorded"].get<int>(), 100);
  const json* meta = finding(doc, "storage.slow-metadata");
  ASSERT_NE(meta, nullptr) << doc["findings"].dump(2);
  EXPECT_EQ(meta->at("figures")["mount_point"], std::filesystem::canonical(mount.path()).string());
  EXPECT_EQ(meta->at("figures")["fs_type"], "fuse.latencyfs");
  const double p50 = meta->at("figures")["stat_p50_ms"].get<double>();
  EXPECT_NEAR(p50, kInjectedStatMs, kInjectedStatMs * 0.25) << "stat p50 " << p50 << " ms";
  std::cout << "[ measured ] stat p50 " << p50 << " ms for an injected " << kInjectedStatMs << " ms\n";

  const json* workers = finding(doc, "loader.too-few-workers");
  ASSERT_NE(workers, nullptr) << doc["findings"].dump(2);
  EXPECT_GT(workers->at("figures")["recommended_num_workers"].get<int>(), 2);
  EXPECT_NE(finding(doc, "loop.starved"), nullptr);
  EXPECT_NE(doc["summary"]["top_cause"], nullptr);
  // Each batch's tensors go to a /dev/shm segment the worker creates: those
  // opens are the workers' "create" row, not files opened (one per sample).
  std::uint64_t creates = 0;
  for (const auto& s : doc["evidence"]["syscalls"]) {
    if (s["role"] == "worker" && s["kind"] == "create") creates += s["count"].get<std::uint64_t>();
  }
  const auto files = doc["evidence"]["workers"]["files_opened"].get<std::uint64_t>();
  // Give or take the batches in flight when the window closed (two workers,
  // prefetch 2: four).
  EXPECT_NEAR(static_cast<double>(files), creates * 8.0, 4 * 8.0) << "one shared-memory segment per batch of 8 files";
  expect_the_jobs_step(doc);
}

// Without a tail every file costs the same, so the two workers stay in step:
// both batches arrive together, the loop waits before one step in two and
// never between, and only the files opened per batch tell a gap holds two.
TEST_F(DiagnoseSlowJob, WorkersInStepGiveGapsOfTwoStepsThatTuneFromSplits) {
  if (auto why = testing::LatencyFsMount::unavailable_reason()) GTEST_SKIP() << *why;
  std::filesystem::create_directory(dir_ / "mnt");
  testing::LatencyFsOptions opt;
  opt.lookup_ms = kInjectedStatMs;
  opt.open_ms = 5;
  opt.read_ms = 2;
  opt.sigma = 0;
  testing::LatencyFsMount mount(dataset_->path(), dir_ / "mnt", opt);
  expect_the_jobs_step(diagnose_job(mount.path()));
}

// The s3fs case: the FUSE daemon spends CPU on every file (3 ms a
// lookup, getattr, open and read, as s3fs parses and signs requests) on the
// same 2 cores as six workers asleep in its calls. The cores, not the
// workers, are the limit: the top cause says so and nothing asks for more
// workers.
TEST_F(DiagnoseSlowJob, SaturatedCoresAreTheTopCauseAndNoMoreWorkersAdvised) {
  if (auto why = testing::LatencyFsMount::unavailable_reason()) GTEST_SKIP() << *why;
  std::filesystem::create_directory(dir_ / "mnt");
  testing::LatencyFsOptions opt;
  opt.lookup_ms = 5;
  opt.open_ms = 2;
  opt.cpu_ms = 3;
  testing::LatencyFsMount mount(dataset_->path(), dir_ / "mnt", opt);
  json doc = diagnose_job(mount.path(), 6);
  EXPECT_EQ(testing::schema_errors("diagnosis", doc), "");
  const json& host = doc["evidence"]["host"];
  std::cout << "[ measured ] cores " << host["cpu_busy_pct"] << "% busy, PSI cpu " << host["psi_cpu_some_pct"]
            << "%; top cause " << doc["summary"]["top_cause"] << "\n";
  const json* saturated = finding(doc, "cpu.saturated");
  ASSERT_NE(saturated, nullptr) << doc["findings"].dump(2);
  EXPECT_EQ(doc["summary"]["top_cause"], "cpu.saturated");
  EXPECT_GT(saturated->at("figures")["outside_job_cpu_s"].get<double>(), 1.0) << "the daemon's CPU is outside the job";
  EXPECT_EQ(finding(doc, "loader.too-few-workers"), nullptr) << doc["findings"].dump(2);
  for (const auto& f : doc["findings"]) {
    const auto advice = f["advice"].get<std::string>();
    for (const char* more : {"more workers overlap", "more DataLoader workers hide", "more workers shorten",
                             "more workers than cores is fine"}) {
      EXPECT_EQ(advice.find(more), std::string::npos) << f["id"] << ": " << advice;
    }
  }
}

TEST_F(DiagnoseSlowJob, LocalDirectoryHasNoStorageFinding) {
  json doc = diagnose_job(dataset_->path());
  EXPECT_EQ(testing::schema_errors("diagnosis", doc), "");
  for (const auto& f : doc["findings"]) {
    EXPECT_NE(f["id"].get<std::string>().rfind("storage.", 0), 0U) << f.dump(2);
  }
}

}  // namespace
}  // namespace gpufeed
