// CRC-32C and the cache key hashes.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "entry_file.hpp"
#include "hashing.hpp"

namespace gpufeed::loader::cache {
namespace {

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

}  // namespace
}  // namespace gpufeed::loader::cache
