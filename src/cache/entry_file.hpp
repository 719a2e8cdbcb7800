#pragma once
// One SSD cache entry = one file, <dir>/<hh>/<16 hex digits>.gfc, named by
// the key's hash (keys may hold '/', spaces, any UTF-8). Layout, little-endian:
//
//   0  "GFCACHE1"          magic and format
//   8  u32 key length      12 u32 version length      16 u64 data size
//   24 u32 CRC-32C of the data
//   28 u32 CRC-32C of bytes 0..27, the key and the version
//   32 key, version, data
//
// The file is complete or absent: it is written under a temporary name in the
// same directory, fsync'ed, then renamed into place. Readers still check the
// size the header implies, both CRCs, and that key, version and size match the
// listing, so a file damaged later is refetched, never served.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpufeed/loader/sample_source.hpp"

namespace gpufeed::loader::cache {

inline constexpr std::size_t kHeaderBytes = 32;
inline constexpr std::string_view kEntrySuffix = ".gfc";
inline constexpr std::string_view kTempPrefix = ".tmp-";

std::string entry_name(std::uint64_t hash);  // "0123456789abcdef.gfc"
std::filesystem::path entry_path(const std::filesystem::path& dir, std::uint64_t hash);
// The hash an entry file name stands for; nullopt for any other name.
std::optional<std::uint64_t> parse_entry_name(std::string_view name);
std::uint64_t entry_file_bytes(const SampleInfo& sample);

// What the fixed header and the key/version block say.
struct EntryHeader {
  std::uint32_t key_bytes = 0;
  std::uint32_t version_bytes = 0;
  std::uint64_t data_bytes = 0;
  std::uint32_t data_crc = 0;
  std::uint32_t header_crc = 0;
  std::uint64_t file_bytes() const { return kHeaderBytes + key_bytes + version_bytes + data_bytes; }
};

// The header and key/version block for `sample` with `data`.
std::vector<std::byte> encode_header(const SampleInfo& sample, std::span<const std::byte> data);
// Decodes the fixed 32 bytes; nullopt when the magic is wrong.
std::optional<EntryHeader> decode_fixed_header(std::span<const std::byte, kHeaderBytes> bytes);
// Whether `meta` (key then version) matches the header's CRC.
bool header_crc_matches(std::span<const std::byte, kHeaderBytes> fixed, const EntryHeader& header,
                        std::span<const std::byte> meta);

enum class EntryStatus {
  Ok,       // served: `out` holds the sample
  Missing,  // no file
  Stale,    // a whole entry, but for another version, size or key
  Corrupt,  // damaged: wrong size, bad magic, checksum mismatch, unreadable
};
struct EntryRead {
  EntryStatus status = EntryStatus::Missing;
  std::string detail;  // why, for Stale and Corrupt
};

// Reads and validates the entry at `file` for `sample` into `data`, which
// holds exactly sample.size bytes (a valid entry has that size, so the bytes
// can land in their final place, e.g. a batch slot). On anything but Ok,
// `data` holds garbage. With `touch`, records the access in the file's atime
// (for LRU order after a restart; noatime mounts ignore only implicit updates).
EntryRead read_entry(const std::filesystem::path& file, const SampleInfo& sample, std::span<std::byte> data,
                     bool touch);

// What a directory scan learns from an entry file without reading its data.
struct ScannedEntry {
  std::string key;
  std::uint64_t data_bytes = 0;
  std::uint64_t file_bytes = 0;
};
// Checks magic, size and header CRC; nullopt (with `why`) when invalid.
std::optional<ScannedEntry> read_entry_header(const std::filesystem::path& file, std::string& why);

// Writes the entry atomically through `temp` (same directory), creating the
// directory when missing. Returns an error message naming the file, or an
// empty string on success; never throws for an I/O failure.
std::string write_entry(const std::filesystem::path& file, const std::filesystem::path& temp,
                        const SampleInfo& sample, std::span<const std::byte> data);

}  // namespace gpufeed::loader::cache
