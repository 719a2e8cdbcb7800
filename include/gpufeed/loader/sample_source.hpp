#pragma once
// Where samples come from: a local directory or manifest, S3, or the built-in
// synthetic store. The pipeline, `bench --storage-only` and the cache tiers
// only see this interface; each store is an adapter (src/loader, src/s3) and
// cache tiers are decorators that wrap another source (src/cache).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpufeed/error.hpp"

namespace gpufeed::loader {

// One sample of the dataset as listed: a path relative to the dataset root,
// an S3 key, or a synthetic index. `size` is the listed size in bytes;
// `version` is what a cache validates an entry against (mtime in ns for
// files, the ETag for S3, empty when the store has none).
struct SampleInfo {
  std::string key;
  std::uint64_t size = 0;
  std::string version;
};

// A single sample could not be read or decoded (missing, unreadable,
// truncated, corrupt). The pipeline counts these and skips them with
// --skip-bad; otherwise it stops with this error, which names the sample.
class SampleError : public Error {
 public:
  SampleError(std::string key, std::string what, std::string hint = {})
      : Error(ErrorKind::Runtime, std::move(what), std::move(hint)), key_(std::move(key)) {}
  const std::string& key() const noexcept { return key_; }

 private:
  std::string key_;
};

// Hits and misses of one cache tier, reported per tier.
struct TierStats {
  std::string tier;              // "memory", "ssd"
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t bytes_cached = 0;  // resident now
  std::uint64_t capacity_bytes = 0;
  std::uint64_t evictions = 0;
  double hit_rate() const {
    const auto n = hits + misses;
    return n ? static_cast<double>(hits) / static_cast<double>(n) : 0.0;
  }
};

// What a job calls per sample (tune --access, --from): `stats` stat(2)
// calls and `extra_opens` open(2)+close(2) before the read, which opens the
// file itself. stat + open + read: {1, 0}; open + read: {0, 0}.
struct AccessPattern {
  int stats = 1;
  int extra_opens = 0;
  bool operator==(const AccessPattern&) const = default;
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;

  virtual std::string kind() const = 0;         // "local", "s3", "synthetic"
  virtual std::string describe() const = 0;     // one line for reports; never credentials
  // Filesystem or store type for the storage table: "ext4", "fuse.latencyfs",
  // "s3", "synthetic (s3fs preset)".
  virtual std::string storage_type() const = 0;

  // The whole dataset in a stable order. Throws gpufeed::Error (usage for a
  // bad location, runtime for a failing store). May be called once and cached
  // by the caller.
  virtual std::vector<SampleInfo> list() = 0;

  // The three operations the storage table times. All thread-safe.
  // stat: the metadata lookup (stat(2), S3 HEAD).
  virtual void stat(const SampleInfo& s) = 0;
  // open: what it costs to start reading (open(2)+close(2); S3: a 1-byte
  // ranged GET, i.e. time to first byte).
  virtual void open(const SampleInfo& s) = 0;
  // read: the whole sample into `out` (resized to fit), as the loader does.
  // A sample-level failure throws SampleError.
  virtual void read(const SampleInfo& s, std::vector<std::byte>& out) = 0;

  // Reads the sample straight into `out` (a slot of a batch buffer), at most
  // out.size() bytes, and returns how many it wrote: saves a copy when no
  // decode is needed. The default reads into a scratch buffer and copies.
  virtual std::size_t read_into(const SampleInfo& s, std::span<std::byte> out);

  // What a job reading this store calls per sample, as far as the store
  // can tell: an ImageFolder-style dataset over a directory stats each file
  // before it opens it; a manifest, an object store or a synthetic preset
  // (whose read holds its own lookup) reads without one.
  virtual AccessPattern usual_access() const { return {0, 0}; }

  // Cache tiers report here, outermost first; a plain store has none.
  virtual std::vector<TierStats> tier_stats() const { return {}; }
};

}  // namespace gpufeed::loader
