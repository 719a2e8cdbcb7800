// LRU bookkeeping of the cache tiers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lru_map.hpp"

namespace gpufeed::loader::cache {
namespace {

using Lru = LruMap<std::string, int>;

TEST(CacheLru, KeepsTheBudgetByDroppingTheLeastRecentlyUsed) {
  Lru lru(30);
  std::vector<Lru::Item> evicted;
  EXPECT_TRUE(lru.put("a", 1, 10, evicted));
  EXPECT_TRUE(lru.put("b", 2, 10, evicted));
  EXPECT_TRUE(lru.put("c", 3, 10, evicted));
  ASSERT_NE(lru.touch("a"), nullptr);  // b is now the oldest
  EXPECT_TRUE(lru.put("d", 4, 10, evicted));
  ASSERT_EQ(evicted.size(), 1U);
  EXPECT_EQ(evicted[0].key, "b");
  EXPECT_EQ(evicted[0].value, 2);
  EXPECT_EQ(lru.keys_by_recency(), (std::vector<std::string>{"d", "a", "c"}));
  EXPECT_EQ(lru.bytes(), 30U);
}

TEST(CacheLru, ABigItemEvictsSeveral) {
  Lru lru(30);
  std::vector<Lru::Item> evicted;
  lru.put("a", 1, 10, evicted);
  lru.put("b", 2, 10, evicted);
  lru.put("c", 3, 10, evicted);
  lru.put("big", 4, 25, evicted);
  EXPECT_EQ(evicted.size(), 3U);
  EXPECT_EQ(lru.size(), 1U);
  EXPECT_EQ(lru.bytes(), 25U);
}

TEST(CacheLru, ReplacingAKeyAdjustsTheBytesWithoutEvicting) {
  Lru lru(30);
  std::vector<Lru::Item> evicted;
  lru.put("a", 1, 10, evicted);
  lru.put("a", 2, 20, evicted);
  EXPECT_TRUE(evicted.empty());
  EXPECT_EQ(lru.bytes(), 20U);
  EXPECT_EQ(*lru.peek("a"), 2);
}

TEST(CacheLru, AnItemLargerThanTheBudgetIsRefused) {
  Lru lru(30);
  std::vector<Lru::Item> evicted;
  lru.put("a", 1, 10, evicted);
  EXPECT_FALSE(lru.put("huge", 2, 31, evicted));
  EXPECT_EQ(lru.size(), 1U);
  EXPECT_TRUE(evicted.empty());
}

TEST(CacheLru, PeekDoesNotChangeTheOrderAndRemoveGivesTheItemBack) {
  Lru lru(100);
  std::vector<Lru::Item> evicted;
  lru.put("a", 1, 10, evicted);
  lru.put("b", 2, 10, evicted);
  EXPECT_EQ(*lru.peek("a"), 1);
  EXPECT_EQ(lru.keys_by_recency().front(), "b");
  const auto removed = lru.remove("a");
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->bytes, 10U);
  EXPECT_EQ(lru.bytes(), 10U);
  EXPECT_FALSE(lru.remove("a"));
  EXPECT_EQ(lru.touch("a"), nullptr);
}

}  // namespace
}  // namespace gpufeed::loader::cache
