// The cache entry format on plain values.
#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "entry_file.hpp"
#include "hashing.hpp"

namespace gpufeed::loader::cache {
namespace {

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
