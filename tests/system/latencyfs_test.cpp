// The latency-injecting FUSE fixture itself: delays are what was asked for,
// parallel lookups really run in parallel, bytes pass through unchanged, and
// the mount goes away with the helper.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "support/latencyfs_mount.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

using testing::LatencyFsMount;
using testing::LatencyFsOptions;
using testing::TempDir;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

class LatencyFs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = LatencyFsMount::unavailable_reason()) GTEST_SKIP() << *why;
  }
  TempDir dir_;
  std::filesystem::path source() const { return dir_ / "source"; }
  std::filesystem::path mnt() const { return dir_ / "mnt"; }
};

// Other work on the machine (ctest -j, builds) can only make a round slower,
// never faster, so timing checks take the best of a few rounds: a fixture bug
// (a missed or doubled delay, serialised lookups) fails every round.
constexpr int kRounds = 3;

TEST_F(LatencyFs, StatTakesTheLookupDelay) {
  dir_.write("source/data/file.bin", testing::reproducible_bytes(1000, 1));
  LatencyFsMount mount(source(), mnt(), LatencyFsOptions{.lookup_ms = 20});
  const auto file = mount.path() / "data" / "file.bin";
  double best = 1e9;
  for (int round = 0; round < kRounds && !(best >= 16.0 && best <= 24.0); ++round) {
    std::vector<double> times;
    for (int i = 0; i < 20; ++i) {
      struct stat st {};
      auto start = Clock::now();
      ASSERT_EQ(stat(file.c_str(), &st), 0) << file;
      times.push_back(ms_since(start));
      ASSERT_EQ(st.st_size, 1000);
    }
    std::sort(times.begin(), times.end());
    EXPECT_GE(times.front(), 19.0) << "a stat() was not delayed";
    best = std::min(best, (times[9] + times[10]) / 2);
  }
  EXPECT_GE(best, 16.0);
  EXPECT_LE(best, 24.0) << "median stat() of the best round";
}

TEST_F(LatencyFs, ParallelStatsInOneDirectoryOverlap) {
  // Each round uses names never looked up before: only first lookups take
  // the kernel's directory lock when parallel dirops are off.
  constexpr int kFiles = 64;
  for (int round = 0; round < kRounds; ++round)
    for (int i = 0; i < kFiles; ++i) dir_.write("source/dir/r" + std::to_string(round) + "_" + std::to_string(i), "x");
  LatencyFsMount mount(source(), mnt(), LatencyFsOptions{.lookup_ms = 20, .threads = 64});
  double best = 1e9;
  for (int round = 0; round < kRounds && best >= 5 * 20.0; ++round) {
    std::vector<int> results(kFiles, -1);
    std::vector<std::thread> threads;
    auto start = Clock::now();
    for (int i = 0; i < kFiles; ++i) {
      threads.emplace_back([&, i] {
        struct stat st {};
        auto file = mount.path() / "dir" / ("r" + std::to_string(round) + "_" + std::to_string(i));
        results[static_cast<size_t>(i)] = stat(file.c_str(), &st);
      });
    }
    for (auto& t : threads) t.join();
    best = std::min(best, ms_since(start));
    ASSERT_EQ(std::count(results.begin(), results.end(), 0), kFiles);
  }
  // Serialised lookups would take 64 x 20 ms = 1.3 s.
  EXPECT_LT(best, 5 * 20.0) << "64 parallel stats took " << best << " ms at best";
}

TEST_F(LatencyFs, ReadsReturnTheSourceBytes) {
  const std::string small = testing::reproducible_bytes(4096, 2);
  const std::string big = testing::reproducible_bytes(3 * 1024 * 1024 + 17, 3);  // several READ requests
  dir_.write("source/a/small.bin", small);
  dir_.write("source/a/big.bin", big);
  LatencyFsMount mount(source(), mnt(), LatencyFsOptions{.open_ms = 1, .read_ms = 1, .sigma = 0.5});
  EXPECT_EQ(testing::read_file(mount.path() / "a" / "small.bin"), small);
  EXPECT_EQ(testing::read_file(mount.path() / "a" / "big.bin"), big);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(mount.path() / "a"))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"big.bin", "small.bin"}));
}

TEST_F(LatencyFs, IsReadOnly) {
  dir_.write("source/f", "x");
  LatencyFsMount mount(source(), mnt(), LatencyFsOptions{});
  EXPECT_FALSE(std::ofstream(mount.path() / "f", std::ios::app).is_open());
  EXPECT_FALSE(std::ofstream(mount.path() / "new").is_open());
  EXPECT_EQ(testing::read_file(source() / "f"), "x");
}

TEST_F(LatencyFs, MountGoesAwayWithTheHelper) {
  dir_.write("source/f", "x");
  std::filesystem::path where;
  {
    LatencyFsMount mount(source(), mnt(), LatencyFsOptions{.lookup_ms = 5});
    where = mount.path();
    EXPECT_TRUE(testing::is_mounted(where));
    EXPECT_TRUE(std::filesystem::exists(where / "f"));
  }
  EXPECT_FALSE(testing::is_mounted(where));
  EXPECT_FALSE(std::filesystem::exists(where / "f"));
}

TEST_F(LatencyFs, BadSourceFailsWithTheFixturesMessage) {
  try {
    LatencyFsMount mount(dir_ / "missing", mnt(), LatencyFsOptions{});
    FAIL() << "mounted a missing source";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("source"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(testing::is_mounted(mnt()));
}

}  // namespace
}  // namespace gpufeed
