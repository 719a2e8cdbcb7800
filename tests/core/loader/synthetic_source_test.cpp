// The synthetic stores and sizes on plain values.
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

}  // namespace
}  // namespace gpufeed::loader
