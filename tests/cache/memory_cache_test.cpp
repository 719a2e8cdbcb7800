// Behaviour both cache tiers share, run against each: the memory tier, and
// the SSD tier in a real temporary directory. The inner store is a fake that
// counts calls (cache_test_source.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <latch>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cache_test_source.hpp"
#include "gpufeed/cache/cache.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed::loader {
namespace {

using testing::Bytes;
using testing::expected_bytes;
using testing::FakeSource;

enum class Tier { Memory, Ssd };

std::string tier_name(const ::testing::TestParamInfo<Tier>& info) {
  return info.param == Tier::Memory ? "Memory" : "Ssd";
}

constexpr std::uint64_t kSampleBytes = 10'000;

class CacheTierTest : public ::testing::TestWithParam<Tier> {
 protected:
  // A cache over a fresh fake of `count` samples with room for `room`
  // samples of kSampleBytes.
  void open(int count, int room) {
    auto fake = std::make_unique<FakeSource>(count, kSampleBytes);
    fake_ = fake.get();
    budget_ = static_cast<std::uint64_t>(room) * bytes_per_entry();
    cache_ = make(std::move(fake), budget_);
  }

  std::unique_ptr<CacheTier> make(std::unique_ptr<SampleSource> inner, std::uint64_t budget) {
    if (GetParam() == Tier::Memory) return make_memory_cache(std::move(inner), budget);
    return make_ssd_cache(std::move(inner), dir_ / "cache", budget);
  }

  // What one sample costs against the budget: the data alone in memory, the
  // whole entry file (header, key, version, data) on disk.
  std::uint64_t bytes_per_entry() const {
    if (GetParam() == Tier::Memory) return kSampleBytes;
    const SampleInfo s = fake_->sample(0);
    return 32 + s.key.size() + s.version.size() + s.size;
  }

  Bytes read(int i) {
    const SampleInfo s = fake_->sample(i);
    Bytes out;
    cache_->read(s, out);
    EXPECT_EQ(out, expected_bytes(s)) << "sample " << i;
    return out;
  }

  TierStats stats() const { return cache_->tier_stats().at(0); }
  CacheHealth health() const { return cache_->health().at(0); }

  ::gpufeed::testing::TempDir dir_;
  FakeSource* fake_ = nullptr;
  std::uint64_t budget_ = 0;
  std::unique_ptr<CacheTier> cache_;
};

TEST_P(CacheTierTest, SecondReadIsAHit) {
  open(4, 4);
  read(0);
  read(0);
  read(1);
  EXPECT_EQ(fake_->reads.load(), 2);
  const TierStats s = stats();
  EXPECT_EQ(s.tier, GetParam() == Tier::Memory ? "memory" : "ssd");
  EXPECT_EQ(s.hits, 1U);
  EXPECT_EQ(s.misses, 2U);
  EXPECT_EQ(s.bytes_cached, 2 * bytes_per_entry());
  EXPECT_EQ(s.capacity_bytes, budget_);
  EXPECT_EQ(s.evictions, 0U);
  EXPECT_EQ(health().entries, 2U);
}

TEST_P(CacheTierTest, EvictsTheLeastRecentlyUsed) {
  open(4, 3);
  read(0);
  read(1);
  read(2);
  read(0);  // 1 is now the least recently used
  read(3);  // evicts 1
  EXPECT_EQ(stats().evictions, 1U);
  const int before = fake_->reads.load();
  read(0);
  read(2);
  read(3);
  EXPECT_EQ(fake_->reads.load(), before) << "0, 2 and 3 should still be cached";
  read(1);
  EXPECT_EQ(fake_->reads.load(), before + 1) << "1 should have been evicted";
}

TEST_P(CacheTierTest, StaysWithinItsBudget) {
  open(50, 7);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 50; i += 1 + round) {
      read(i);
      ASSERT_LE(stats().bytes_cached, budget_);
    }
  }
  EXPECT_EQ(stats().bytes_cached, 7 * bytes_per_entry());
  EXPECT_GT(stats().evictions, 0U);
}

TEST_P(CacheTierTest, ANewVersionIsRefetched) {
  open(2, 2);
  read(0);
  fake_->set_version(0, "v2");
  read(0);  // checks that the v2 bytes come back
  EXPECT_EQ(fake_->reads_of(fake_->sample(0).key), 2);
  EXPECT_EQ(health().invalidated, 1U);
  read(0);
  EXPECT_EQ(fake_->reads_of(fake_->sample(0).key), 2) << "v2 should now be cached";
  EXPECT_EQ(stats().bytes_cached, bytes_per_entry());
}

TEST_P(CacheTierTest, ASizeThatDiffersFromTheListingIsServedButNotCached) {
  open(2, 2);
  fake_->extra_bytes = 5;
  const SampleInfo s = fake_->sample(0);
  for (int i = 0; i < 2; ++i) {
    Bytes out;
    cache_->read(s, out);
    EXPECT_EQ(out.size(), s.size + 5);
  }
  EXPECT_EQ(fake_->reads.load(), 2);
  EXPECT_EQ(health().not_cached, 2U);
  EXPECT_EQ(stats().bytes_cached, 0U);
}

TEST_P(CacheTierTest, ASampleLargerThanTheBudgetIsNotCached) {
  auto fake = std::make_unique<FakeSource>(1, 5000);
  fake_ = fake.get();
  cache_ = make(std::move(fake), 4000);
  read(0);
  read(0);
  EXPECT_EQ(fake_->reads.load(), 2);
  EXPECT_EQ(health().not_cached, 2U);
}

TEST_P(CacheTierTest, InnerFailuresPassThroughAndAreNotCached) {
  open(2, 2);
  const SampleInfo s = fake_->sample(1);
  fake_->fail(s.key);
  for (int i = 0; i < 2; ++i) {
    Bytes out;
    try {
      cache_->read(s, out);
      ADD_FAILURE() << "no error";
    } catch (const SampleError& e) {
      EXPECT_EQ(e.key(), s.key);
      EXPECT_NE(std::string(e.what()).find("injected failure"), std::string::npos);
    }
  }
  EXPECT_EQ(fake_->reads_of(s.key), 2);
}

TEST_P(CacheTierTest, ReadIntoFillsABatchSlotOnMissesAndHits) {
  open(2, 2);
  const SampleInfo s = fake_->sample(0);
  const Bytes expected = expected_bytes(s);
  for (int round = 0; round < 2; ++round) {  // a miss, then a hit
    Bytes slot(kSampleBytes + 100, std::byte{0xee});
    EXPECT_EQ(cache_->read_into(s, slot), kSampleBytes);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), slot.begin())) << "round " << round;
    EXPECT_EQ(slot.back(), std::byte{0xee}) << "nothing beyond the sample is written";
  }
  // A slot shorter than the sample gets its first bytes, like the store's.
  Bytes short_slot(100);
  EXPECT_EQ(cache_->read_into(s, short_slot), 100U);
  EXPECT_TRUE(std::equal(short_slot.begin(), short_slot.end(), expected.begin()));
  // A miss through read_into caches the sample for read() too.
  const SampleInfo other = fake_->sample(1);
  Bytes slot(kSampleBytes);
  EXPECT_EQ(cache_->read_into(other, slot), kSampleBytes);
  read(1);
  EXPECT_EQ(fake_->reads.load(), 2);
  EXPECT_EQ(stats().hits, 3U);
  EXPECT_EQ(stats().misses, 2U);
}

TEST_P(CacheTierTest, StatOpenAndListPassThrough) {
  open(3, 3);
  const SampleInfo s = fake_->sample(0);
  cache_->stat(s);
  cache_->stat(s);
  cache_->open(s);
  EXPECT_EQ(fake_->stats.load(), 2);
  EXPECT_EQ(fake_->opens.load(), 1);
  EXPECT_EQ(cache_->list().size(), 3U);
  EXPECT_EQ(cache_->kind(), "fake");
  EXPECT_EQ(cache_->storage_type(), "fakefs");
  const std::string describe = cache_->describe();
  EXPECT_EQ(describe.rfind("fake store + ", 0), 0U) << describe;
  EXPECT_NE(describe.find(GetParam() == Tier::Memory ? "memory cache" : "ssd cache"), std::string::npos) << describe;
}

TEST_P(CacheTierTest, ConcurrentMissesOfOneSampleFetchItOnce) {
  open(1, 1);
  fake_->delay = std::chrono::milliseconds(100);
  std::latch start(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      read(0);
    });
  }
  for (auto& t : threads) t.join();
  // Whether a thread joined the fetch or came after it, the store saw one read.
  EXPECT_EQ(fake_->reads.load(), 1);
  const TierStats s = stats();
  EXPECT_EQ(s.hits + s.misses, 8U);
  EXPECT_EQ(s.hits + health().coalesced, 7U);
}

TEST_P(CacheTierTest, ConcurrentMissesShareAFailure) {
  open(1, 1);
  fake_->delay = std::chrono::milliseconds(100);
  fake_->fail(fake_->sample(0).key);
  std::latch start(8);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      Bytes out;
      try {
        cache_->read(fake_->sample(0), out);
      } catch (const SampleError&) {
        ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 8);
  EXPECT_LE(fake_->reads.load(), 8);
}

TEST_P(CacheTierTest, EightThreadsOverManyKeysAlwaysGetTheRightBytes) {
  open(300, 40);  // constant eviction
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      Bytes out;
      for (int n = 0; n < 600; ++n) {
        // Skewed towards low indexes so there are hits as well as misses.
        const int i = static_cast<int>(rng() % 300) % (n % 3 == 0 ? 300 : 50);
        const SampleInfo s = fake_->sample(i);
        cache_->read(s, out);
        if (out != expected_bytes(s)) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  const TierStats s = stats();
  EXPECT_EQ(s.hits + s.misses, 8U * 600U);
  EXPECT_GT(s.hits, 0U);
  EXPECT_GT(s.evictions, 0U);
  EXPECT_LE(s.bytes_cached, budget_);
}

TEST_P(CacheTierTest, AZeroBudgetIsAUsageError) {
  try {
    make(std::make_unique<FakeSource>(1, 1), 0);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_FALSE(e.hint().empty());
  }
}

INSTANTIATE_TEST_SUITE_P(BothTiers, CacheTierTest, ::testing::Values(Tier::Memory, Tier::Ssd), tier_name);

TEST(CacheTiers, MemoryOverSsdReportsBothTiersOutermostFirst) {
  ::gpufeed::testing::TempDir dir;
  auto fake = std::make_unique<FakeSource>(3, 1000);
  FakeSource* fake_ptr = fake.get();
  auto ssd = make_ssd_cache(std::move(fake), dir / "ssd", 1 << 20);
  auto memory = make_memory_cache(std::move(ssd), 1 << 20);
  Bytes out;
  memory->read(fake_ptr->sample(0), out);
  memory->read(fake_ptr->sample(0), out);
  const auto stats = memory->tier_stats();
  ASSERT_EQ(stats.size(), 2U);
  EXPECT_EQ(stats[0].tier, "memory");
  EXPECT_EQ(stats[0].hits, 1U);
  EXPECT_EQ(stats[1].tier, "ssd");
  EXPECT_EQ(stats[1].misses, 1U);
  EXPECT_EQ(stats[1].hits, 0U);
  const auto health = cache_health(*memory);
  ASSERT_EQ(health.size(), 2U);
  EXPECT_EQ(health[1].tier, "ssd");
  EXPECT_TRUE(cache_health(*fake_ptr).empty());
  EXPECT_NE(memory->describe().find("fake store + ssd cache 1 MiB at "), std::string::npos) << memory->describe();
  EXPECT_NE(memory->describe().find(" + memory cache 1 MiB"), std::string::npos);
}

}  // namespace
}  // namespace gpufeed::loader
