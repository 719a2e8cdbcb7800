#pragma once
// Opening an SSD cache directory: checks that it can be used, and finds the
// entries a previous run left behind.
#include <cstdint>
#include <filesystem>
#include <vector>

namespace gpufeed::loader::cache {

inline constexpr const char* kMarkerName = "GPUFEED-CACHE";

// Creates `dir` when missing and marks it as a gpufeed cache. Throws a usage
// error naming `dir` when it is not a directory, cannot be created or written,
// or is a non-empty directory without our marker: gpufeed deletes files in its
// cache directory, so it never adopts someone else's.
void prepare_cache_directory(const std::filesystem::path& dir);

struct FoundEntry {
  std::uint64_t hash = 0;
  std::uint64_t data_bytes = 0;
  std::uint64_t file_bytes = 0;
  std::int64_t last_used_ns = 0;  // the later of atime and mtime
};

struct ScanResult {
  std::vector<FoundEntry> entries;  // least recently used first
  std::uint64_t removed = 0;        // temp files and invalid entries deleted
};

// Walks the 256 subdirectories: deletes leftover temp files (a crash between
// create and rename) and entry files whose header fails validation or whose
// name is not their key's hash; leaves files that are not ours alone.
ScanResult scan_cache_directory(const std::filesystem::path& dir);

}  // namespace gpufeed::loader::cache
