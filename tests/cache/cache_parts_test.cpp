// The parts of the cache tiers on plain values: LRU bookkeeping, the
// single-flight gate, CRC-32C, key hashes and the entry format.
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <random>
#include <stdexcept>
#include <thread>

#include "entry_file.hpp"
#include "hashing.hpp"
#include "lru_map.hpp"
#include "single_flight.hpp"

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

TEST(CacheSingleFlight, WaitersShareTheLeadersBytes) {
  SingleFlight flights;
  std::atomic<int> fetches{0};
  std::latch start(6);
  std::atomic<int> joined{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      std::vector<std::byte> out;
      start.arrive_and_wait();
      if (flights.run("k", out, [&](std::vector<std::byte>& buffer) {
            ++fetches;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            buffer.assign(3, std::byte{7});
          })) {
        ++joined;
      }
      EXPECT_EQ(out, std::vector<std::byte>(3, std::byte{7}));
    });
  }
  for (auto& t : threads) t.join();
  // Every thread either fetched or joined; the gate forgets a key as soon as
  // its fetch ends, so a latecomer fetches again.
  EXPECT_EQ(fetches.load() + joined.load(), 6);
  EXPECT_GE(joined.load(), 1);
}

TEST(CacheSingleFlight, WaitersGetTheLeadersError) {
  SingleFlight flights;
  std::latch start(4);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<std::byte> out;
      start.arrive_and_wait();
      try {
        flights.run("k", out, [](std::vector<std::byte>&) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          throw std::runtime_error("store down");
        });
      } catch (const std::runtime_error& e) {
        if (std::string(e.what()) == "store down") ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 4);
}

TEST(CacheSingleFlight, DifferentKeysDoNotWait) {
  SingleFlight flights;
  std::vector<std::byte> out;
  int fetches = 0;
  const auto fetch = [&](std::vector<std::byte>&) { ++fetches; };
  EXPECT_FALSE(flights.run("a", out, fetch));
  EXPECT_FALSE(flights.run("b", out, fetch));
  EXPECT_FALSE(flights.run("a", out, fetch));  // the first one has ended
  EXPECT_EQ(fetches, 3);
}

std::span<const std::byte> bytes_of(std::string_view text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

TEST(CacheHashing, Crc32cMatchesTheStandardCheckValue) {
  EXPECT_EQ(crc32c(std::string_view("123456789")), 0xE3069283U);  // RFC 3720 / the CRC catalogue
  EXPECT_EQ(crc32c_portable(bytes_of("123456789")), 0xE3069283U);
  EXPECT_EQ(crc32c(std::string_view("")), 0U);
  // 32 zero bytes, from RFC 3720's examples.
  EXPECT_EQ(crc32c(std::vector<std::byte>(32)), 0x8A9136AAU);
}

TEST(CacheHashing, Crc32cChainsAndAgreesWithThePortableCode) {
  std::mt19937 rng(5);
  std::vector<std::byte> data(100'003);
  for (auto& b : data) b = static_cast<std::byte>(rng());
  const std::span all(data);
  EXPECT_EQ(crc32c(all), crc32c_portable(all));
  EXPECT_EQ(crc32c(all.subspan(777), crc32c(all.first(777))), crc32c(all));
  for (std::size_t n = 0; n < 20; ++n) EXPECT_EQ(crc32c(all.first(n)), crc32c_portable(all.first(n))) << n;
}

TEST(CacheHashing, KeyHashesSpreadAndNameEntries) {
  EXPECT_EQ(key_hash("a/b c.jpg"), key_hash("a/b c.jpg"));
  EXPECT_NE(key_hash("a/b c.jpg"), key_hash("a/b c.jpeg"));
  std::set<std::uint64_t> top_bytes;
  for (int i = 0; i < 2000; ++i) top_bytes.insert(key_hash("train/" + std::to_string(i) + ".jpg") >> 56);
  EXPECT_GT(top_bytes.size(), 240U) << "the 256 subdirectories should all be used";

  const std::uint64_t h = 0x0123456789abcdefULL;
  EXPECT_EQ(entry_name(h), "0123456789abcdef.gfc");
  EXPECT_EQ(entry_path("/c", h), std::filesystem::path("/c/01/0123456789abcdef.gfc"));
  EXPECT_EQ(parse_entry_name("0123456789abcdef.gfc"), h);
  EXPECT_FALSE(parse_entry_name("0123456789ABCDEF.gfc"));
  EXPECT_FALSE(parse_entry_name(".tmp-0123456789abcdef-1-2"));
  EXPECT_FALSE(parse_entry_name("0123456789abcdef.gfc.bak"));
}

TEST(CacheEntryFormat, HeaderRoundTrips) {
  const SampleInfo s{"dir/ü x.jpg", 5, "1700000000123456789"};
  const std::vector<std::byte> data = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}, std::byte{5}};
  const std::vector<std::byte> encoded = encode_header(s, data);
  ASSERT_EQ(encoded.size(), kHeaderBytes + s.key.size() + s.version.size());
  const std::span<const std::byte, kHeaderBytes> fixed(encoded.data(), kHeaderBytes);
  const auto header = decode_fixed_header(fixed);
  ASSERT_TRUE(header);
  EXPECT_EQ(header->key_bytes, s.key.size());
  EXPECT_EQ(header->version_bytes, s.version.size());
  EXPECT_EQ(header->data_bytes, 5U);
  EXPECT_EQ(header->data_crc, crc32c(data));
  EXPECT_EQ(header->file_bytes(), entry_file_bytes(s));
  const std::span meta = std::span(encoded).subspan(kHeaderBytes);
  EXPECT_TRUE(header_crc_matches(fixed, *header, meta));

  std::vector<std::byte> damaged = encoded;
  damaged.back() ^= std::byte{1};  // one bit of the version
  EXPECT_FALSE(header_crc_matches(fixed, *header, std::span(damaged).subspan(kHeaderBytes)));
  damaged = encoded;
  damaged[0] = std::byte{'X'};
  EXPECT_FALSE(decode_fixed_header(std::span<const std::byte, kHeaderBytes>(damaged.data(), kHeaderBytes)));
}

}  // namespace
}  // namespace gpufeed::loader::cache
