#include "hashing.hpp"

#include <array>
#include <cstring>

namespace gpufeed::loader::cache {
namespace {

constexpr std::uint32_t kPolynomial = 0x82f63b78;  // CRC-32C, reflected

using Tables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1U) ? kPolynomial : 0U);
    t[0][i] = crc;
  }
  for (std::size_t i = 0; i < 256; ++i) {
    for (std::size_t k = 1; k < 8; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xffU];
  }
  return t;
}

constexpr Tables kTables = make_tables();

std::uint32_t update_portable(std::uint32_t crc, const unsigned char* p, std::size_t n) {
  while (n >= 8) {
    std::uint32_t low = 0;
    std::uint32_t high = 0;
    std::memcpy(&low, p, 4);  // little-endian hosts (x86-64, arm64)
    std::memcpy(&high, p + 4, 4);
    low ^= crc;
    crc = kTables[7][low & 0xffU] ^ kTables[6][(low >> 8) & 0xffU] ^ kTables[5][(low >> 16) & 0xffU] ^
          kTables[4][low >> 24] ^ kTables[3][high & 0xffU] ^ kTables[2][(high >> 8) & 0xffU] ^
          kTables[1][(high >> 16) & 0xffU] ^ kTables[0][high >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xffU];
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t update_sse42(std::uint32_t crc, const unsigned char* p,
                                                               std::size_t n) {
  std::uint64_t wide = crc;
  while (n >= 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, p, 8);
    wide = __builtin_ia32_crc32di(wide, word);
    p += 8;
    n -= 8;
  }
  auto narrow = static_cast<std::uint32_t>(wide);
  while (n-- > 0) narrow = __builtin_ia32_crc32qi(narrow, *p++);
  return narrow;
}

bool has_sse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

std::uint32_t update(std::uint32_t crc, const unsigned char* p, std::size_t n) {
#if defined(__x86_64__)
  if (has_sse42()) return update_sse42(crc, p, n);
#endif
  return update_portable(crc, p, n);
}

}  // namespace

std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc) {
  return ~update(~crc, reinterpret_cast<const unsigned char*>(data.data()), data.size());
}

std::uint32_t crc32c(std::string_view text, std::uint32_t crc) {
  return ~update(~crc, reinterpret_cast<const unsigned char*>(text.data()), text.size());
}

std::uint32_t crc32c_portable(std::span<const std::byte> data, std::uint32_t crc) {
  return ~update_portable(~crc, reinterpret_cast<const unsigned char*>(data.data()), data.size());
}

std::uint64_t key_hash(std::string_view key) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : key) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

}  // namespace gpufeed::loader::cache
