// LRU bookkeeping of the cache tiers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lru_map.hpp"

namespace gpufeed::loader::cache {
namespace {

using Lru = LruMap<std::string, int>;

// A 30-byte budget holding a, b and c of 10 bytes each, oldest first.
class CacheLru : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& [key, value] : {std::pair{"a", 1}, {"b", 2}, {"c", 3}}) ASSERT_TRUE(lru.put(key, value, 10, evicted));
    ASSERT_TRUE(evicted.empty());
  }
  Lru lru{30};
  std::vector<Lru::Item> evicted;
};

TEST_F(CacheLru, KeepsTheBudgetByDroppingTheLeastRecentlyUsed) {
  ASSERT_NE(lru.touch("a"), nullptr);  // b is now the oldest
  EXPECT_TRUE(lru.put("d", 4, 10, evicted));
  ASSERT_EQ(evicted.size(), 1U);
  EXPECT_EQ(evicted[0].key, "b");
  EXPECT_EQ(evicted[0].value, 2);
  EXPECT_EQ(lru.keys_by_recency(), (std::vector<std::string>{"d", "a", "c"}));
  EXPECT_EQ(lru.bytes(), 30U);
}

TEST_F(CacheLru, ABigItemEvictsSeveral) {
  lru.put("big", 4, 25, evicted);
  EXPECT_EQ(evicted.size(), 3U);
  EXPECT_EQ(lru.size(), 1U);
  EXPECT_EQ(lru.bytes(), 25U);
}

TEST_F(CacheLru, ReplacingAKeyAdjustsTheBytesWithoutEvicting) {
  ASSERT_TRUE(lru.remove("c"));  // room for a to grow by 10 bytes
  EXPECT_TRUE(lru.put("a", 2, 20, evicted));
  EXPECT_TRUE(evicted.empty());
  EXPECT_EQ(lru.bytes(), 30U);
  EXPECT_EQ(lru.size(), 2U);
  EXPECT_EQ(*lru.peek("a"), 2);
}

TEST_F(CacheLru, AnItemLargerThanTheBudgetIsRefused) {
  EXPECT_FALSE(lru.put("huge", 2, 31, evicted));
  EXPECT_EQ(lru.size(), 3U);
  EXPECT_TRUE(evicted.empty());
}

TEST_F(CacheLru, PeekDoesNotChangeTheOrderAndRemoveGivesTheItemBack) {
  EXPECT_EQ(*lru.peek("a"), 1);
  EXPECT_EQ(lru.keys_by_recency().front(), "c");
  const auto removed = lru.remove("a");
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->bytes, 10U);
  EXPECT_EQ(lru.bytes(), 20U);
  EXPECT_FALSE(lru.remove("a"));
  EXPECT_EQ(lru.touch("a"), nullptr);
}

}  // namespace
}  // namespace gpufeed::loader::cache
