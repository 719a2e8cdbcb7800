// The synthetic store, sizes, the storage table and the bench report on
// plain values.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "gpufeed/loader/bench_report.hpp"
#include "gpufeed/loader/storage_table.hpp"
#include "gpufeed/loader/synthetic_source.hpp"
#include "gpufeed/units.hpp"
#include "support/fake_loader.hpp"

namespace gpufeed::loader {
namespace {

using namespace std::chrono_literals;

TEST(Units, ParseSizeTakesBinaryAndDecimalUnits) {
  EXPECT_EQ(parse_size("4096", "--x"), 4096u);
  EXPECT_EQ(parse_size("50KiB", "--x"), 51200u);
  EXPECT_EQ(parse_size("1.5GiB", "--x"), 1610612736u);
  EXPECT_EQ(parse_size("2gb", "--x"), 2000000000u);
  EXPECT_THROW(parse_size("lots", "--x"), Error);
  EXPECT_THROW(parse_size("5 parsecs", "--x"), Error);
  try {
    parse_size("-1GiB", "--mem-budget");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--mem-budget"), std::string::npos);
  }
}

TEST(Synthetic, PresetsAndKeysParse) {
  const auto s = parse_synthetic_spec("synthetic:s3fs,samples=500,size=50KiB,bad=0.1");
  EXPECT_EQ(s.preset, "s3fs");
  EXPECT_EQ(s.samples, 500u);
  EXPECT_EQ(s.size_mean_bytes, 51200);
  EXPECT_DOUBLE_EQ(s.bad_fraction, 0.1);
  EXPECT_GT(s.stat.median_ms, 10);  // an object store behind FUSE
  EXPECT_EQ(parse_synthetic_spec("synthetic:").preset, "local-nvme");
  EXPECT_EQ(parse_synthetic_spec("synthetic:memory").stat.median_ms, 0);
  EXPECT_TRUE(is_synthetic_spec("synthetic:s3"));
  EXPECT_FALSE(is_synthetic_spec("/data/synthetic:s3"));
  for (const auto& p : synthetic_presets()) EXPECT_NO_THROW(parse_synthetic_spec("synthetic:" + p)) << p;
  EXPECT_THROW(parse_synthetic_spec("synthetic:floppy"), Error);
  EXPECT_THROW(parse_synthetic_spec("synthetic:s3,colour=blue"), Error);
  EXPECT_THROW(parse_synthetic_spec("synthetic:s3,samples=many"), Error);
  EXPECT_THROW(parse_synthetic_spec("synthetic:s3,samples=0"), Error);
}

TEST(Synthetic, TheIncidentPresetHasTheIncidentsMagnitudes) {
  // stat() averaged 47 ms; open() took 5-300 ms.
  const auto s = parse_synthetic_spec("synthetic:s3fs");
  EXPECT_NEAR(s.stat.mean_ms(), 47, 5);
  EXPECT_GT(s.open.quantile_ms(0.01), 2);
  EXPECT_LT(s.open.quantile_ms(0.01), 10);
  EXPECT_GT(s.open.quantile_ms(0.99), 200);
  EXPECT_LT(s.open.quantile_ms(0.99), 400);
}

TEST(Synthetic, ListingIsDeterministicWithTheRequestedMeanSize) {
  auto a = make_synthetic_source(parse_synthetic_spec("synthetic:memory,samples=20000,size=100KiB"));
  auto b = make_synthetic_source(parse_synthetic_spec("synthetic:memory,samples=20000,size=100KiB"));
  const auto la = a->list();
  ASSERT_EQ(la.size(), 20000u);
  double sum = 0;
  for (const auto& s : la) sum += static_cast<double>(s.size);
  EXPECT_NEAR(sum / 20000 / 102400, 1.0, 0.02);
  const auto lb = b->list();
  EXPECT_EQ(la[123].size, lb[123].size);
  EXPECT_EQ(la[123].key, lb[123].key);
  std::vector<std::byte> bytes;
  a->read(la[5], bytes);
  EXPECT_EQ(bytes.size(), la[5].size);
}

TEST(Synthetic, BadFractionFailsThatShareOfSamples) {
  auto src = make_synthetic_source(parse_synthetic_spec("synthetic:memory,samples=2000,bad=0.05"));
  int bad = 0;
  std::vector<std::byte> bytes;
  for (const auto& s : src->list()) {
    try {
      src->read(s, bytes);
    } catch (const SampleError& e) {
      ++bad;
      EXPECT_EQ(e.key(), s.key);
    }
  }
  EXPECT_GT(bad, 60);
  EXPECT_LT(bad, 140);
}

TEST(Synthetic, ReadTakesTheConfiguredLatency) {
  auto src = make_synthetic_source(parse_synthetic_spec("synthetic:memory,samples=10,read-ms=20,sigma=0"));
  const auto samples = src->list();
  std::vector<std::byte> bytes;
  const auto t0 = std::chrono::steady_clock::now();
  src->read(samples[0], bytes);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
}

TEST(StorageTable, SummarisesLatenciesExactly) {
  const auto o = summarise_latencies({5, 1, 4, 2, 3});
  EXPECT_EQ(o.count, 5u);
  EXPECT_DOUBLE_EQ(o.p50_ms, 3);
  EXPECT_DOUBLE_EQ(o.mean_ms, 3);
  EXPECT_DOUBLE_EQ(o.max_ms, 5);
  EXPECT_EQ(summarise_latencies({}).count, 0u);
}

TEST(StorageTable, MeasuresEachLevelAndWalksFreshSamples) {
  testing::FakeSource source(1000, 1ms);
  const auto samples = source.list();
  StorageProbeOptions options;
  options.concurrency = {1, 4};
  options.per_level = 10s;
  options.max_samples_per_level = 40;
  const auto table = measure_storage(source, samples, options);
  ASSERT_EQ(table.levels.size(), 2u);
  for (const auto& l : table.levels) {
    EXPECT_EQ(l.samples, 40u);
    EXPECT_GE(l.stat.p50_ms, 1.0);
    EXPECT_LT(l.stat.p50_ms, 20.0);
    EXPECT_EQ(l.bytes, 40u * 16u);
  }
  EXPECT_GT(table.levels[1].samples_per_s, 2 * table.levels[0].samples_per_s) << "four streams, sleep-bound";
  EXPECT_FALSE(table.samples_reused);
  EXPECT_EQ(source.reads().size(), 80u) << "the second level read samples the first did not";
}

// A level whose time budget ends before it has a distribution runs on to
// its minimum count, within its overrun limit; without a minimum, the
// budget alone ends it.
TEST(StorageTable, AShortLevelRunsOnToItsMinimumSamplesWithinItsLimit) {
  testing::FakeSource source(1000, 10ms);  // stat + open + read: 30 ms an access
  const auto samples = source.list();
  StorageProbeOptions options;
  options.concurrency = {1};
  options.per_level = 100ms;
  const auto budget_only = measure_storage(source, samples, options);
  ASSERT_EQ(budget_only.levels.size(), 1u);
  EXPECT_LE(budget_only.levels[0].samples, 5u);
  EXPECT_FALSE(budget_only.levels[0].ran_on);

  options.min_samples_per_level = 8;
  options.overrun_factor = 20;
  const auto ran_on = measure_storage(source, samples, options).levels.at(0);
  EXPECT_EQ(ran_on.samples, 8u) << "stops at the minimum, not at the limit";
  EXPECT_TRUE(ran_on.ran_on);
  EXPECT_GE(ran_on.wall_s, 0.2);

  options.min_samples_per_level = 1000;
  options.overrun_factor = 3;
  const auto limited = measure_storage(source, samples, options).levels.at(0);
  EXPECT_TRUE(limited.ran_on);
  EXPECT_LT(limited.samples, 1000u);
  EXPECT_GE(limited.wall_s, 0.29);
  EXPECT_LT(limited.wall_s, 1.0) << "the overrun limit ends it";
}

TEST(BenchReport, TextAndJsonCarryTheHeadlineFigures) {
  BenchReport r;
  r.setup.source = "synthetic s3fs";
  r.setup.config.workers = 8;
  r.figures.samples_per_s = 1234.5;
  r.figures.starvation = 0.25;
  r.figures.fetch.add(2'000'000);
  r.tiers.push_back({"memory", 3, 1, 100, 1000, 0});
  const Json j = to_json(r);
  EXPECT_EQ(j["throughput"]["samples_per_s"], 1234.5);
  EXPECT_EQ(j["setup"]["config"]["workers"], 8);
  EXPECT_EQ(j["cache_tiers"][0]["hit_rate"], 0.75);
  std::ostringstream text;
  render_text(r, TextStyle{}, true, text);
  EXPECT_NE(text.str().find("1234 samples/s"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("starvation 25.0%"), std::string::npos);
  EXPECT_NE(text.str().find("memory cache"), std::string::npos);
}

}  // namespace
}  // namespace gpufeed::loader
