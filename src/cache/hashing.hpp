#pragma once
// Checksums and key hashes of the SSD tier, written here (no dependency).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace gpufeed::loader::cache {

// CRC-32C (Castagnoli, as in iSCSI and ext4 metadata); `crc` chains calls:
// crc32c(b, crc32c(a)) == crc32c(a + b). Uses the SSE4.2 instruction when the
// CPU has it, a slicing-by-8 table otherwise; both give the same value.
std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc = 0);
std::uint32_t crc32c(std::string_view text, std::uint32_t crc = 0);
// The table version alone, so tests can compare it with the instruction.
std::uint32_t crc32c_portable(std::span<const std::byte> data, std::uint32_t crc = 0);

// A 64-bit hash of a sample key (FNV-1a, then a splitmix64 finaliser so every
// bit depends on every byte); names the key's entry file.
std::uint64_t key_hash(std::string_view key);

}  // namespace gpufeed::loader::cache
