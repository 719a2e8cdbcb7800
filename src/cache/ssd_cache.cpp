// The SSD tier: one validated file per sample in a cache directory, LRU
// within a byte budget. The index lives in memory (rebuilt by a scan when the
// directory is opened); file I/O happens outside the lock, except the unlink
// of evicted entries, which must not race a rewrite of the same name.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "cache_directory.hpp"
#include "entry_file.hpp"
#include "gpufeed/cache/cache.hpp"
#include "gpufeed/units.hpp"
#include "hashing.hpp"
#include "lru_map.hpp"
#include "single_flight.hpp"
#include "tier_counters.hpp"

namespace gpufeed::loader {
namespace {

using Bytes = std::vector<std::byte>;
using cache::EntryStatus;

// Record a hit in the file's atime at most this often per entry: the order
// after a restart needs no finer grain, and each touch dirties the inode.
constexpr std::int64_t kTouchIntervalS = 60;

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct IndexEntry {
  std::uint64_t data_bytes = 0;
  std::uint64_t generation = 0;  // tells a rewritten entry from the one a reader saw
  std::int64_t touched_s = 0;
};

class SsdCache final : public CacheTier {
  using Index = cache::LruMap<std::uint64_t, IndexEntry>;  // by key hash

 public:
  SsdCache(std::unique_ptr<SampleSource> inner, std::filesystem::path dir, std::uint64_t budget)
      : inner_(std::move(inner)), dir_(std::move(dir)), index_(budget) {
    cache::prepare_cache_directory(dir_);
    try {
      adopt(cache::scan_cache_directory(dir_));
    } catch (const std::filesystem::filesystem_error& e) {
      throw usage_error(fmt::format("cannot scan cache directory {}: {}", dir_.string(), e.code().message()),
                        "check its permissions, or give another --cache-dir");
    }
  }

  std::string kind() const override { return inner_->kind(); }
  std::string describe() const override {
    std::string text =
        fmt::format("{} + ssd cache {} at {}", inner_->describe(), format_bytes(index_.budget()), dir_.string());
    std::lock_guard lock(mutex_);
    if (write_failures_ > 0) text += fmt::format(" ({} cache writes failed: {})", write_failures_, last_write_error_);
    return text;
  }
  std::string storage_type() const override { return inner_->storage_type(); }
  std::vector<SampleInfo> list() override { return inner_->list(); }
  void stat(const SampleInfo& s) override { inner_->stat(s); }
  void open(const SampleInfo& s) override { inner_->open(s); }

  void read(const SampleInfo& s, Bytes& out) override {
    const std::uint64_t hash = cache::key_hash(s.key);
    out.resize(s.size);
    if (!first_look(s, hash, out)) fetch(s, hash, out);
  }

  // A hit lands straight in the batch slot: no copy through a buffer.
  std::size_t read_into(const SampleInfo& s, std::span<std::byte> out) override {
    if (s.size > out.size()) return SampleSource::read_into(s, out);  // a short slot: the prefix, via read()
    const std::uint64_t hash = cache::key_hash(s.key);
    if (first_look(s, hash, out.first(s.size))) return s.size;
    thread_local Bytes scratch;
    fetch(s, hash, scratch);
    const std::size_t n = std::min(scratch.size(), out.size());
    std::copy_n(scratch.begin(), n, out.begin());
    return n;
  }

  std::vector<TierStats> tier_stats() const override {
    std::unique_lock lock(mutex_);
    TierStats mine = counts_.stats("ssd", index_.bytes(), index_.budget());
    lock.unlock();
    return cache::stacked_on(std::move(mine), *inner_);
  }

  std::vector<CacheHealth> health() const override {
    std::unique_lock lock(mutex_);
    CacheHealth mine = counts_.health("ssd", index_.size());
    mine.corrupt = corrupt_;
    mine.write_failures = write_failures_;
    mine.last_write_error = last_write_error_;
    mine.removed_at_open = removed_at_open_;
    lock.unlock();
    return cache::stacked_on(std::move(mine), *inner_);
  }

 private:
  std::filesystem::path path_of(std::uint64_t hash) const { return cache::entry_path(dir_, hash); }

  // What the previous run left, least recently used first, within budget.
  void adopt(const cache::ScanResult& scan) {
    removed_at_open_ = scan.removed;
    std::vector<Index::Item> evicted;
    for (const auto& e : scan.entries) {
      // touched_s = 0: the first hit refreshes the file's atime.
      index_.put(e.hash, IndexEntry{e.data_bytes, ++generation_, 0}, e.file_bytes, evicted);
    }
    for (const auto& item : evicted) ::unlink(path_of(item.key).c_str());
    counts_.evictions += evicted.size();
  }

  // The read's look at the disk, counted as its hit or miss.
  bool first_look(const SampleInfo& s, std::uint64_t hash, std::span<std::byte> data) {
    const bool hit = serve_from_disk(s, hash, data);
    std::lock_guard lock(mutex_);
    ++(hit ? counts_.hits : counts_.misses);
    return hit;
  }

  // The miss path: one fetch from the store per sample however many threads
  // miss it at once, written to disk before the others are let go.
  void fetch(const SampleInfo& s, std::uint64_t hash, Bytes& out) {
    bool served_late = false;
    const bool joined = flights_.run(s.key + '\0' + s.version, out, [&](Bytes& buffer) {
      // Another thread may have stored it between our look and this flight.
      buffer.resize(s.size);
      if (serve_from_disk(s, hash, buffer)) {
        served_late = true;
        return;
      }
      inner_->read(s, buffer);
      store(s, hash, buffer);
    });
    if (joined || served_late) {
      std::lock_guard lock(mutex_);
      ++counts_.coalesced;
    }
  }

  // True when `data` (sample.size bytes) was filled from a valid entry.
  // Drops entries that fail validation; the caller counts the hit or miss.
  bool serve_from_disk(const SampleInfo& s, std::uint64_t hash, std::span<std::byte> data) {
    std::uint64_t generation = 0;
    bool touch = false;
    {
      std::lock_guard lock(mutex_);
      IndexEntry* entry = index_.touch(hash);
      if (entry == nullptr) return false;
      if (entry->data_bytes != s.size) {  // known stale without opening it
        drop(hash, entry->generation, true);
        ++counts_.invalidated;
        return false;
      }
      generation = entry->generation;
      const std::int64_t now = now_s();
      touch = now - entry->touched_s >= kTouchIntervalS;
      if (touch) entry->touched_s = now;
    }
    const cache::EntryRead result = cache::read_entry(path_of(hash), s, data, touch);
    if (result.status == EntryStatus::Ok) return true;
    std::lock_guard lock(mutex_);
    switch (result.status) {
      case EntryStatus::Ok:
        break;
      case EntryStatus::Missing:  // evicted meanwhile, or removed by hand
        drop(hash, generation, false);
        break;
      case EntryStatus::Stale:
        drop(hash, generation, true);
        ++counts_.invalidated;
        break;
      case EntryStatus::Corrupt:
        drop(hash, generation, true);
        ++corrupt_;
        break;
    }
    return false;
  }

  // Forgets the entry (and deletes its file) unless it was rewritten since
  // the reader looked. Caller holds mutex_.
  void drop(std::uint64_t hash, std::uint64_t generation, bool delete_file) {
    const IndexEntry* entry = index_.peek(hash);
    if (entry == nullptr || entry->generation != generation) return;
    index_.remove(hash);
    if (delete_file) ::unlink(path_of(hash).c_str());
  }

  // Inside the fetch, so a reader arriving after the flight ends finds it.
  // Failing to write is counted and reported, never thrown: the caller has
  // its bytes either way.
  void store(const SampleInfo& s, std::uint64_t hash, const Bytes& data) {
    const std::uint64_t file_bytes = cache::entry_file_bytes(s);
    if (data.size() != s.size || file_bytes > index_.budget()) {
      std::lock_guard lock(mutex_);
      ++counts_.not_cached;
      return;
    }
    const auto file = path_of(hash);
    const auto temp = file.parent_path() / fmt::format("{}{:016x}-{}-{}", cache::kTempPrefix, hash, ::getpid(),
                                                       temp_sequence_.fetch_add(1));
    const std::string error = cache::write_entry(file, temp, s, data);
    std::lock_guard lock(mutex_);
    if (!error.empty()) {
      ++write_failures_;
      last_write_error_ = error;
      return;
    }
    std::vector<Index::Item> evicted;
    index_.put(hash, IndexEntry{data.size(), ++generation_, now_s()}, file_bytes, evicted);
    for (const auto& item : evicted) ::unlink(path_of(item.key).c_str());
    counts_.evictions += evicted.size();
  }

  std::unique_ptr<SampleSource> inner_;
  const std::filesystem::path dir_;
  cache::SingleFlight flights_;
  std::atomic<std::uint64_t> temp_sequence_{0};

  mutable std::mutex mutex_;  // guards everything below
  Index index_;
  std::uint64_t generation_ = 0;
  cache::TierCounters counts_;
  std::uint64_t corrupt_ = 0;
  std::uint64_t write_failures_ = 0;
  std::string last_write_error_;
  std::uint64_t removed_at_open_ = 0;
};

}  // namespace

std::unique_ptr<CacheTier> make_ssd_cache(std::unique_ptr<SampleSource> inner, const std::filesystem::path& dir,
                                          std::uint64_t budget_bytes) {
  if (!inner) throw std::invalid_argument("make_ssd_cache: no inner source");
  if (dir.empty()) throw usage_error("the cache directory is empty", "give --cache-dir DIR on a local SSD");
  if (budget_bytes == 0) {
    throw usage_error(fmt::format("the SSD cache size for {} is 0 bytes", dir.string()),
                      "give a size such as --cache-size 100GiB");
  }
  return std::make_unique<SsdCache>(std::move(inner), dir, budget_bytes);
}

}  // namespace gpufeed::loader
