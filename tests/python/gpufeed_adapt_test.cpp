// python/gpufeed_adapt.py on the real PyTorch DataLoader: the starving job on
// the FUSE fixture grows its workers between epochs until it is fed, a fed
// job on local files is left alone, and advice from a running gpufeed
// monitor reaches it. Root: the fixture is a FUSE mount and monitor loads
// eBPF; each test skips with its reason where the machine lacks something.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/ebpf_host.hpp"
#include "support/latencyfs_mount.hpp"
#include "support/python_fixtures.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

using nlohmann::json;
using testing::ChildProcess;
using testing::fixture_script;
using testing::kPython;
using testing::TempDir;

constexpr int kEpochs = 5;

class Adapt : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::torch_unavailable_reason()) GTEST_SKIP() << *why;
    const TempDir* jpegs = testing::shared_jpeg_dataset();
    ASSERT_NE(jpegs, nullptr) << "tests/fixtures/make_dataset.py failed";
    dataset_ = epoch_of_many_batches(*jpegs);
  }

  // The shared 240 JPEGs hard-linked 8 times over: 240 batches of 8, so an
  // epoch is long enough to judge the ~20 workers x prefetch the fed job
  // needs (gpufeed_adapt's JUDGE_IN_FLIGHT), as real datasets' epochs are.
  static const std::filesystem::path& epoch_of_many_batches(const TempDir& jpegs) {
    static TempDir dir;
    static bool made = false;
    if (!made) {
      for (int copy = 0; copy < 8; ++copy) {
        for (const auto& e : std::filesystem::recursive_directory_iterator(jpegs.path())) {
          const auto to = dir.path() / ("copy" + std::to_string(copy)) / std::filesystem::relative(e.path(), jpegs.path());
          if (e.is_directory()) {
            std::filesystem::create_directories(to);
          } else {
            std::filesystem::create_directories(to.parent_path());
            std::filesystem::create_hard_link(e.path(), to);
          }
        }
      }
      made = true;
    }
    return dir.path();
  }

  std::vector<std::string> job(const std::filesystem::path& data, std::vector<std::string> extra = {},
                               int epochs = kEpochs) {
    std::vector<std::string> argv = {kPython, fixture_script("adaptive_job.py"), "--data", data.string(),
                                     "--workers", "2", "--batch-size", "8", "--step-ms", "20", "--stat",
                                     "--epochs", std::to_string(epochs)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  // One record per epoch, from the job's stdout.
  std::vector<json> run(const std::vector<std::string>& argv, std::size_t epochs = kEpochs, double timeout_s = 300) {
    const auto out = dir_ / "job.out";
    ChildProcess p(argv, out);
    auto code = p.wait(timeout_s);
    EXPECT_TRUE(code) << "the job did not finish in " << timeout_s << " s";
    EXPECT_EQ(code.value_or(-1), 0) << testing::read_file(out);
    std::vector<json> records;
    std::istringstream lines(testing::read_file(out));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line[0] == '{') records.push_back(json::parse(line));
    }
    EXPECT_EQ(records.size(), epochs) << testing::read_file(out);
    return records;
  }

  // The job's rate when its data is local and the loader keeps up, fixed at
  // 2 workers: the median of its epochs after the first.
  double fed_rate() {
    auto epochs = run(job(dataset_, {"--no-adapt"}, 3), 3);
    std::vector<double> rates;
    for (std::size_t i = 1; i < epochs.size(); ++i) rates.push_back(epochs[i]["batches_per_s"].get<double>());
    if (rates.empty()) return 0;
    std::sort(rates.begin(), rates.end());
    EXPECT_LT(epochs.back()["wait_ratio"].get<double>(), 0.1) << "the local job is not fed: " << epochs.back();
    return rates[rates.size() / 2];
  }

  static std::string trace(const std::vector<json>& epochs) {
    std::string s;
    for (const auto& e : epochs) {
      s += "\n  epoch " + e["epoch"].dump() + ": " + e["num_workers"].dump() + " workers, prefetch " +
           e["prefetch_factor"].dump() + ", " + e["batches_per_s"].dump() + " batches/s, wait " +
           e["wait_ratio"].dump() + " -> " + e["action"].get<std::string>() + ": " + e["because"].get<std::string>();
    }
    return s;
  }

  testing::LatencyFsOptions slow_metadata() const {
    testing::LatencyFsOptions opt;
    opt.lookup_ms = 10;  // every stat and every open's path lookup
    opt.open_ms = 5;
    opt.read_ms = 2;
    opt.sigma = 0.5;  // heavy tail: p99 about 3x the median
    return opt;
  }

  std::filesystem::path dataset_;
  TempDir dir_;
};

TEST_F(Adapt, TheStarvingFuseJobReachesItsFedRateWithinFourEpochs) {
  if (auto why = testing::LatencyFsMount::unavailable_reason()) GTEST_SKIP() << *why;
  const double fed = fed_rate();
  ASSERT_GT(fed, 0);
  std::filesystem::create_directory(dir_ / "mnt");
  testing::LatencyFsMount mount(dataset_, dir_ / "mnt", slow_metadata());
  const auto epochs = run(job(mount.path()));
  ASSERT_EQ(epochs.size(), static_cast<std::size_t>(kEpochs));

  EXPECT_GT(epochs[0]["wait_ratio"].get<double>(), 0.5) << "the fixture does not starve 2 workers" << trace(epochs);
  double best = 0;
  for (int i = 0; i < 4; ++i) best = std::max(best, epochs[i]["batches_per_s"].get<double>());
  std::cout << "[ measured ] fed " << fed << " batches/s; adaptive from 2 workers reaches " << best
            << " in 4 epochs (" << best / fed << " of fed)" << trace(epochs) << "\n";
  EXPECT_GE(best, 0.95 * fed) << trace(epochs);
  // What it settles on stays fed: the last epoch is not a trial that lost.
  EXPECT_GE(epochs.back()["batches_per_s"].get<double>(), 0.9 * fed) << trace(epochs);
}

TEST_F(Adapt, AFedLocalJobIsNotChanged) {
  const auto epochs = run(job(dataset_));
  for (const auto& e : epochs) {
    EXPECT_EQ(e["num_workers"], 2) << trace(epochs);
    EXPECT_EQ(e["prefetch_factor"], 2) << trace(epochs);
    EXPECT_EQ(e["action"], "hold") << trace(epochs);
  }
  std::cout << "[ measured ] fed local job:" << trace(epochs) << "\n";
}

TEST_F(Adapt, AdviceFromARunningMonitorReachesTheJob) {
  if (auto why = testing::ebpf_unavailable_reason()) GTEST_SKIP() << *why;
  if (auto why = testing::LatencyFsMount::unavailable_reason()) GTEST_SKIP() << *why;
  std::filesystem::create_directory(dir_ / "mnt");
  testing::LatencyFsMount mount(dataset_, dir_ / "mnt", slow_metadata());
  const auto jsonl = dir_ / "monitor.jsonl";
  std::vector<std::string> argv = {GPUFEED_BINARY, "monitor", "--quiet", "--no-listen", "--window", "5",
                                   "--jsonl", jsonl.string(), "--"};
  for (const auto& a : job(mount.path(), {"--advice", jsonl.string()})) argv.push_back(a);
  const auto epochs = run(argv);
  ASSERT_FALSE(epochs.empty());

  std::ifstream in(jsonl);
  json recommended;
  for (std::string line; std::getline(in, line);) {
    json rec = json::parse(line, nullptr, false);
    if (rec.is_object() && rec["type"] == "finding" && rec["id"] == "loader.too-few-workers" &&
        rec["event"] == "started") {
      recommended = rec["figures"]["recommended_num_workers"];
    }
  }
  ASSERT_TRUE(recommended.is_number_integer()) << "monitor logged no loader.too-few-workers with its figures";
  std::cout << "[ measured ] monitor recommended " << recommended << " workers;" << trace(epochs) << "\n";
  EXPECT_GT(epochs.back()["num_workers"].get<int>(), 2) << trace(epochs);
  EXPECT_LT(epochs.back()["wait_ratio"].get<double>(), epochs.front()["wait_ratio"].get<double>()) << trace(epochs);
}

}  // namespace
}  // namespace gpufeed
