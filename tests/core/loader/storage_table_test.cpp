// The storage table on plain values: latency summaries and the level walk.
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

}  // namespace
}  // namespace gpufeed::loader
