// `gpufeed bench` through the CLI: documents that validate, the storage table,
// bad input with one-line errors and distinct exit codes, JPEG decode on a
// generated dataset, and Ctrl-C on the real binary.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "support/child_process.hpp"
#include "support/cli_runner.hpp"
#include "support/schema_validator.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

using testing::run_binary;
using testing::run_cli;
using testing::schema_errors;
using testing::TempDir;

nlohmann::json parse(const std::string& text) { return nlohmann::json::parse(text); }

TEST(BenchCli, SyntheticRunWritesAValidDocument) {
  const auto r = run_cli({"bench", "--data", "synthetic:memory,samples=2000,size=4KiB", "--workers", "2",
                          "--batch-size", "16", "--batches", "60", "--device", "host", "--json", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = parse(r.out);
  EXPECT_EQ(schema_errors("bench", doc), "");
  EXPECT_EQ(doc["schema"], "gpufeed.bench/v1");
  EXPECT_EQ(doc["mode"], "loader");
  EXPECT_GT(doc["throughput"]["samples_per_s"].get<double>(), 0);
  EXPECT_EQ(doc["run"]["total_batches"], 60);
  EXPECT_EQ(doc["setup"]["device"], "host");
  EXPECT_EQ(doc["memory"]["pinned_bytes"], 2 * 2 * 16 * doc["setup"]["sample_bytes"].get<int>());
}

TEST(BenchCli, TextReportLeadsWithThroughputAndStarvation) {
  const auto r = run_cli({"bench", "--data", "synthetic:memory,samples=500,size=1KiB", "--batches", "30",
                          "--batch-size", "8", "--step-ms", "1", "--device", "host"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("samples/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("starvation"), std::string::npos);
  EXPECT_NE(r.out.find("simulated step 1 ms"), std::string::npos);
  EXPECT_NE(r.out.find("host to device"), std::string::npos);
}

TEST(BenchCli, StorageOnlyTableValidates) {
  TempDir dir;
  for (int i = 0; i < 50; ++i) dir.write("data/f" + std::to_string(i), std::string(2048, 'x'));
  const auto r = run_cli({"bench", "--storage-only", "--data", (dir / "data").string(), "--concurrency", "1,4",
                          "--level-samples", "20", "--json", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = parse(r.out);
  EXPECT_EQ(schema_errors("bench", doc), "");
  ASSERT_EQ(doc["levels"].size(), 2u);
  EXPECT_EQ(doc["levels"][1]["concurrency"], 4);
  EXPECT_EQ(doc["levels"][0]["samples"], 20);
  EXPECT_EQ(doc["levels"][0]["bytes"], 20 * 2048);
}

struct BadInput {
  std::vector<std::string> args;
  int code;
  std::string says;
};

TEST(BenchCli, BadInputGetsOneLineAndADistinctCode) {
  const std::vector<BadInput> cases = {
      {{"bench"}, 2, "--data"},
      {{"bench", "--data", "/nonexistent/set"}, 2, "/nonexistent/set"},
      {{"bench", "--data", "synthetic:floppy"}, 2, "floppy"},
      {{"bench", "--data", "synthetic:memory", "--decode", "webp"}, 2, "--decode webp"},
      {{"bench", "--data", "synthetic:memory", "--step-ms", "soon"}, 2, "--step-ms"},
      {{"bench", "--data", "synthetic:memory", "--device", "tpu"}, 2, "--device tpu"},
      {{"bench", "--data", "synthetic:memory", "--workers", "0", "--batches", "1"}, 2, "--workers"},
      {{"bench", "--data", "synthetic:memory", "--mem-budget", "lots"}, 2, "--mem-budget"},
      {{"bench", "--data", "synthetic:memory,samples=10", "--batch-size", "32", "--batches", "1"}, 2, "fewer than one batch"},
      {{"bench", "--data", "synthetic:memory", "--cpu-us", "5", "--decode", "jpeg"}, 2, "--cpu-us"},
  };
  for (const auto& c : cases) {
    const auto r = run_cli(c.args);
    EXPECT_EQ(r.code, c.code) << c.args.back() << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << "no report for a refused run";
  }
}

TEST(BenchCli, AConfigOverTheMemoryBudgetIsRefusedWithTheFormula) {
  const auto r = run_cli({"bench", "--data", "synthetic:memory,samples=1000,size=100KiB,size-sigma=0", "--workers", "8",
                          "--prefetch", "4", "--batch-size", "64", "--sample-bytes", "100KiB", "--mem-budget", "100MiB",
                          "--batches", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("8 workers x 4 prefetch x 64 samples x 100 KiB = 200 MiB exceeds --mem-budget 100 MiB"),
            std::string::npos)
      << r.err;
}

TEST(BenchCli, BadSamplesStopTheRunUnlessSkipped) {
  const std::vector<std::string> base = {"bench", "--data", "synthetic:memory,samples=2000,size=1KiB,bad=0.05",
                                         "--batches", "40", "--batch-size", "16", "--device", "host"};
  const auto stopped = run_cli(base);
  EXPECT_EQ(stopped.code, 1);
  EXPECT_NE(stopped.err.find("synthetic/"), std::string::npos) << "names the sample: " << stopped.err;
  EXPECT_NE(stopped.err.find("--skip-bad"), std::string::npos) << "says how to go on: " << stopped.err;
  auto args = base;
  args.insert(args.end(), {"--skip-bad", "--json", "-"});
  const auto skipped = run_cli(args);
  ASSERT_EQ(skipped.code, 0) << skipped.err;
  const auto doc = parse(skipped.out);
  EXPECT_GT(doc["run"]["bad_samples"].get<int>(), 0);
}

TEST(BenchCli, JpegDecodeOnAGeneratedDataset) {
  TempDir dir;
  const std::string make = std::string("/usr/bin/python3 ") + GPUFEED_SOURCE_DIR +
                           "/tests/fixtures/make_dataset.py " + (dir / "set").string() +
                           " --files 64 --classes 4 --size-kb 20 >/dev/null 2>&1";
  if (std::system(make.c_str()) != 0) GTEST_SKIP() << "cannot generate JPEGs (needs python3-pil and python3-numpy)";
  const auto r = run_cli({"bench", "--data", (dir / "set").string(), "--decode", "jpeg", "--image-size", "64",
                          "--workers", "2", "--batch-size", "8", "--batches", "16", "--device", "host", "--json", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = parse(r.out);
  EXPECT_EQ(schema_errors("bench", doc), "");
  EXPECT_EQ(doc["setup"]["sample_bytes"], 64 * 64 * 3);
  EXPECT_GT(doc["transform_time"]["mean_ms"].get<double>(), 0.0);
  EXPECT_EQ(doc["run"]["bad_samples"], 0);
}

TEST(BenchCli, CacheTiersReportHitRates) {
  const auto r = run_cli({"bench", "--data", "synthetic:memory,samples=64,size=1KiB", "--cache-mem", "1MiB",
                          "--batch-size", "8", "--batches", "40", "--device", "host", "--json", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = parse(r.out);
  ASSERT_EQ(doc["cache_tiers"].size(), 1u);
  EXPECT_EQ(doc["cache_tiers"][0]["tier"], "memory");
  // 40 batches of 8 over 64 samples: 5 epochs, the first misses, the rest hit.
  EXPECT_EQ(doc["cache_tiers"][0]["misses"], 64);
  EXPECT_GE(doc["cache_tiers"][0]["hits"].get<int>(), 40 * 8 - 64);
}

TEST(BenchBinary, CtrlCEndsTheRunAndStillReports) {
  TempDir dir;
  const auto json = dir / "bench.json";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string out = (dir / "out.txt").string();
    freopen(out.c_str(), "w", stdout);
    execl(GPUFEED_BINARY, GPUFEED_BINARY, "bench", "--data", "synthetic:s3fs,samples=5000", "--duration", "60",
          "--device", "host", "--step-ms", "5", "--json", json.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Ready: the loop sleeps in its step, so it has had a batch (a Ctrl-C
  // before the first batch is exit 1: nothing was measured).
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!testing::sleeping_in_a_step(pid) && std::chrono::steady_clock::now() < limit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGINT);
  int status = 0;
  const auto t0 = std::chrono::steady_clock::now();
  waitpid(pid, &status, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10)) << "bounded stop";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const auto doc = parse(testing::read_file(json));
  EXPECT_EQ(doc["run"]["stopped_early"], true);
  EXPECT_NE(testing::read_file(dir / "out.txt").find("Stopped early"), std::string::npos);
}

}  // namespace
}  // namespace gpufeed
