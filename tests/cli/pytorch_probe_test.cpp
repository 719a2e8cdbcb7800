// `gpufeed tune --pytorch-probe`: the real probe (python/gpufeed_pytorch_probe.py
// under Debian's python3-torch) pricing the built-in target as a PyTorch
// pipeline, what it refuses, and Ctrl-C while it runs.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <thread>

#include "support/cli_runner.hpp"
#include "support/schema_validator.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::run_cli;
using testing::schema_errors;
using testing::TempDir;

// 64 small JPEGs in 4 classes; empty when this machine cannot make them.
std::string jpeg_dataset(const TempDir& dir) {
  const auto set = dir / "set";
  const std::string make = std::string("/usr/bin/python3 ") + GPUFEED_SOURCE_DIR + "/tests/fixtures/make_dataset.py " +
                           set.string() + " --files 64 --classes 4 --size-kb 20 >/dev/null 2>&1";
  return std::system(make.c_str()) == 0 ? set.string() : std::string();
}

bool python_has_torch() {
  return std::system("/usr/bin/python3 -c 'import torch, PIL, numpy' >/dev/null 2>&1") == 0;
}

std::vector<std::string> probe_tune(const std::string& data, const fs::path& out) {
  return {"tune", "--data", data, "--decode", "jpeg", "--full-decode", "--filter", "bicubic", "--crop", "whole",
          "--image-size", "64", "--batch-size", "4", "--step-ms", "2", "--trial-seconds", "1",
          "--first-round-seconds", "0.5", "--measure-seconds", "0.3", "--max-workers", "4", "--device", "host",
          "--out", out.string(), "--pytorch-probe"};
}

fs::path fake_python(const TempDir& dir, const std::string& body) {
  const auto p = dir.write("python", "#!/bin/sh\n" + body + "\n");
  fs::permissions(p, fs::perms::owner_all);
  return p;
}

// The probe's scratch directories go to TMPDIR: each test points it at a
// directory of its own (ctest runs tests side by side) and counts there;
// the old TMPDIR comes back when the test ends.
class PrivateTmpdir {
 public:
  explicit PrivateTmpdir(const TempDir& dir) : path_(created(dir / "tmp")), env_("TMPDIR", path_.c_str()) {}
  const fs::path& path() const { return path_; }

 private:
  static fs::path created(fs::path p) {
    fs::create_directories(p);
    return p;
  }
  fs::path path_;
  testing::ScopedEnv env_;
};

int probe_dirs_left(const fs::path& tmp) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(tmp)) {
    if (e.path().filename().string().rfind("gpufeed-pytorch-probe-", 0) == 0) ++n;
  }
  return n;
}

// The N of "N ms <marker>" in the report; -1 when absent.
double ms_before(const std::string& text, const std::string& marker) {
  std::smatch m;
  return std::regex_search(text, m, std::regex("([0-9.]+) ms " + marker)) ? std::stod(m[1].str()) : -1;
}

TEST(TunePytorchProbe, PricesTheBuiltinTargetAsAPyTorchPipeline) {
  if (!python_has_torch()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch, PIL and numpy (python3-torch)";
  TempDir dir;
  const auto data = jpeg_dataset(dir);
  ASSERT_FALSE(data.empty()) << "make_dataset.py failed although PIL imports";
  const PrivateTmpdir tmp(dir);
  const auto out = dir / "config.json";
  const auto r = run_cli(probe_tune(data, out));
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  // "PyTorch (PIL open + ... ; torch X, PIL Y): A ms of CPU per sample in the worker, B ms per batch in the loop"
  EXPECT_NE(r.out.find("PyTorch (PIL open + convert(RGB) + whole crop + bicubic resize to 64x64"), std::string::npos)
      << r.out;
  const double worker = ms_before(r.out, "of CPU per sample in the worker");
  const double loop = ms_before(r.out, "per batch in the loop");
  EXPECT_GT(worker, 0.05) << r.out;
  EXPECT_LT(worker, 100) << r.out;
  EXPECT_GT(loop, 0.0) << r.out;
  EXPECT_NE(r.out.find("the built-in loader with a stock PyTorch pipeline's CPU"), std::string::npos) << r.out;
  // The built-in transform timed in turns with the real probe (its group
  // paused and resumed), and the ratio of the two.
  const double builtin = ms_before(r.out, "per sample -> the pipeline costs x");
  EXPECT_GT(builtin, 0.01) << r.out;
  EXPECT_LT(builtin, 100) << r.out;
  const auto at = r.out.find("the pipeline costs x");
  ASSERT_NE(at, std::string::npos) << r.out;
  const double ratio = std::stod(r.out.substr(at + std::string("the pipeline costs x").size()));
  EXPECT_NEAR(ratio, worker / builtin, 0.01 + 0.05 * ratio) << r.out;  // both printed to 0.01 ms
  const auto doc = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(schema_errors("config", doc), "");
  // What the trials ran, so check re-runs it: the loop's CPU spun before each
  // 2 ms sleep, and each sample's CPU at the pipeline's ratio (at least 1).
  EXPECT_NEAR(doc["workload"]["step_cpu_ms"].get<double>(), loop, 0.006);
  EXPECT_EQ(doc["workload"]["step_ms"], "2");
  EXPECT_EQ(doc["workload"]["cpu_us"].get<double>(), 0.0) << "the ratio, not a fixed extra";
  EXPECT_NEAR(doc["workload"]["cpu_scale"].get<double>(), std::max(1.0, ratio), 0.01 + 0.01 * ratio);
  EXPECT_NE(doc["workload"]["step"].get<std::string>().find("--pytorch-probe"), std::string::npos);
  EXPECT_EQ(probe_dirs_left(tmp.path()), 0) << "the copied samples are removed";
}

TEST(TunePytorchProbe, RefusesWhatItCannotRun) {
  TempDir dir;
  const auto out = dir / "config.json";
  const auto none = run_cli({"tune", "--data", "synthetic:memory", "--pytorch-probe", "--out", out.string()});
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("--pytorch-probe prices a PIL image pipeline, not --decode none"), std::string::npos) << none.err;
  const auto lone = run_cli({"tune", "--data", "synthetic:memory", "--python", "/usr/bin/python3"});
  EXPECT_EQ(lone.code, 2);
  EXPECT_NE(lone.err.find("--python is only for --pytorch-probe"), std::string::npos) << lone.err;
  const auto exec = run_cli({"tune", "--data", "synthetic:memory", "--decode", "jpeg", "--pytorch-probe", "--exec",
                             "x {num_workers}"});
  EXPECT_EQ(exec.code, 2);
  EXPECT_NE(exec.err.find("--pytorch-probe and --exec"), std::string::npos) << exec.err;

  const auto data = jpeg_dataset(dir);
  if (data.empty()) GTEST_SKIP() << "cannot generate JPEGs (needs python3-pil and python3-numpy)";
  auto with_python = [&](const std::string& python) {
    auto args = probe_tune(data, out);
    args.insert(args.end(), {"--python", python});
    return run_cli(args);
  };
  const auto missing = with_python("/nonexistent/python3");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("--python /nonexistent/python3: no such program"), std::string::npos) << missing.err;
  // The probe's own refusal (exit 3: no torch) is quoted as a usage error.
  const auto no_torch = with_python(fake_python(dir, "echo 'gpufeed_pytorch_probe: python cannot import torch: "
                                                     "install python3-torch' >&2; exit 3").string());
  EXPECT_EQ(no_torch.code, 2);
  EXPECT_NE(no_torch.err.find("cannot import torch: install python3-torch"), std::string::npos) << no_torch.err;
  const auto garbage = with_python(fake_python(dir, "echo hello").string());
  EXPECT_EQ(garbage.code, 1);
  EXPECT_NE(garbage.err.find("printed no JSON answer"), std::string::npos) << garbage.err;
  const auto wrong = with_python(fake_python(dir, "echo '{\"schema\": \"gpufeed.pytorch-probe/v1\"}'").string());
  EXPECT_EQ(wrong.code, 1);
  EXPECT_NE(wrong.err.find("measured no CPU in the worker"), std::string::npos) << wrong.err;
  EXPECT_FALSE(fs::exists(out)) << "no config from a refused request";
}

// Ctrl-C while the probe runs stops it and whatever it started (its own
// process group), writes no config, and leaves no copied samples behind.
TEST(TunePytorchProbe, CtrlCStopsTheProbeAndItsChildren) {
  TempDir dir;
  const auto data = jpeg_dataset(dir);
  if (data.empty()) GTEST_SKIP() << "cannot generate JPEGs (needs python3-pil and python3-numpy)";
  const auto pid_file = dir / "sleeper.pid";
  const auto python = fake_python(dir, "sleep 60 & echo $! > " + pid_file.string() + "; wait");
  const auto out = dir / "config.json";
  auto args = probe_tune(data, out);
  args.insert(args.end(), {"--python", python.string()});
  const PrivateTmpdir tmp(dir);  // the binary inherits it
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen((dir / "stdout").c_str(), "w", stdout);
    freopen((dir / "stderr").c_str(), "w", stderr);
    std::vector<char*> argv{const_cast<char*>(GPUFEED_BINARY)};
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(GPUFEED_BINARY, argv.data());
    _exit(127);
  }
  // Ready: the probe's child has started its sleeper and written its pid
  // whole (echo ends the line), not after a guess at how long that takes.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string pid_line;
  while (std::chrono::steady_clock::now() < deadline && (pid_line.empty() || pid_line.back() != '\n')) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (fs::exists(pid_file)) pid_line = read_file(pid_file);
  }
  int sleeper = 0;
  std::istringstream(pid_line) >> sleeper;
  ASSERT_GT(sleeper, 0) << read_file(dir / "stdout") << read_file(dir / "stderr");
  const auto interrupted = std::chrono::steady_clock::now();
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - interrupted).count();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << read_file(dir / "stderr");
  EXPECT_NE(read_file(dir / "stderr").find("--pytorch-probe was interrupted"), std::string::npos) << read_file(dir / "stderr");
  EXPECT_LT(took, 5.0) << "stopped at once, not after the probe's 60 s";
  EXPECT_FALSE(fs::exists(out));
  bool sleeper_gone = false;
  for (int i = 0; i < 50 && !sleeper_gone; ++i) {
    sleeper_gone = kill(sleeper, 0) != 0;
    if (!sleeper_gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(sleeper_gone) << "the probe's child " << sleeper << " still runs";
  EXPECT_EQ(probe_dirs_left(tmp.path()), 0) << "the copied samples are removed";
}

}  // namespace
}  // namespace gpufeed
