#pragma once
// Cache tiers: decorators that wrap another SampleSource and serve repeated
// reads from memory or from a directory on a local SSD (see docs/cache.md).
//
//   memory   LRU of whole samples within a byte budget; concurrent misses of
//            one sample fetch it once.
//   ssd      one file per sample under a cache directory, LRU within a byte
//            budget, validated against the listing (size and version) and a
//            CRC-32C; written by temp file + fsync + rename, so a crash never
//            leaves a torn entry that could be served; reopened directories
//            are rescanned and keep their contents.
//
// Both tiers: read() is cached; stat() and open() pass through to the inner
// source, because the storage table times them to describe the store itself;
// kind(), storage_type() and list() are the inner source's; describe() adds
// the tier ("… + memory cache 2 GiB"). tier_stats() reports this tier first,
// then the inner source's tiers. All methods are thread-safe.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gpufeed/loader/sample_source.hpp"

namespace gpufeed::loader {

// What a tier did beyond hits and misses, for the report's notes.
struct CacheHealth {
  std::string tier;                   // "memory", "ssd"
  std::uint64_t coalesced = 0;        // misses that waited for another thread's fetch of the same sample
  std::uint64_t invalidated = 0;      // entries dropped because the listing's size or version changed
  std::uint64_t corrupt = 0;          // ssd: entries that failed validation on read (refetched)
  std::uint64_t not_cached = 0;       // samples larger than the budget, or whose size differs from the listing
  std::uint64_t write_failures = 0;   // ssd: entries that could not be written (the read still succeeded)
  std::string last_write_error;       // ssd: the latest such failure, one line
  std::uint64_t removed_at_open = 0;  // ssd: temp files and invalid entries deleted when the directory was opened
  std::uint64_t entries = 0;          // resident now
};

// A SampleSource that is a cache tier in front of another.
class CacheTier : public SampleSource {
 public:
  // This tier's health first, then the inner tiers' (like tier_stats()).
  virtual std::vector<CacheHealth> health() const = 0;
};

// The health of every cache tier in `source` (empty for a plain store).
std::vector<CacheHealth> cache_health(const SampleSource& source);

// Memory tier of `budget_bytes` (sample bytes; bookkeeping not counted).
// Throws a usage error for a zero budget.
std::unique_ptr<CacheTier> make_memory_cache(std::unique_ptr<SampleSource> inner, std::uint64_t budget_bytes);

// SSD tier in `dir` (created when missing) of `budget_bytes` (entry file sizes).
// Throws a usage error naming `dir` when it is not a directory, cannot be
// created or written, or is a non-empty directory that is not a gpufeed cache
// (so a mistyped path never has its files deleted); for a zero budget too.
std::unique_ptr<CacheTier> make_ssd_cache(std::unique_ptr<SampleSource> inner, const std::filesystem::path& dir,
                                          std::uint64_t budget_bytes);

}  // namespace gpufeed::loader
