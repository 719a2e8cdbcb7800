// The memory tier: whole samples in an LRU within a byte budget.
#include <algorithm>
#include <memory>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include "gpufeed/cache/cache.hpp"
#include "gpufeed/units.hpp"
#include "lru_map.hpp"
#include "single_flight.hpp"
#include "tier_counters.hpp"

namespace gpufeed::loader {
namespace {

using Bytes = std::vector<std::byte>;

struct MemoryEntry {
  std::string version;
  std::shared_ptr<const Bytes> data;  // shared so a hit copies outside the lock
};

class MemoryCache final : public CacheTier {
  using LruMap = cache::LruMap<std::string, MemoryEntry>;

 public:
  MemoryCache(std::unique_ptr<SampleSource> inner, std::uint64_t budget)
      : inner_(std::move(inner)), lru_(budget) {}

  std::string kind() const override { return inner_->kind(); }
  std::string describe() const override {
    return fmt::format("{} + memory cache {}", inner_->describe(), format_bytes(lru_.budget()));
  }
  std::string storage_type() const override { return inner_->storage_type(); }
  std::vector<SampleInfo> list() override { return inner_->list(); }
  void stat(const SampleInfo& s) override { inner_->stat(s); }
  void open(const SampleInfo& s) override { inner_->open(s); }

  void read(const SampleInfo& s, Bytes& out) override {
    if (const auto cached = lookup(s, true)) {
      out.assign(cached->begin(), cached->end());
      return;
    }
    fetch(s, out);
  }

  // A hit is copied straight into the batch slot.
  std::size_t read_into(const SampleInfo& s, std::span<std::byte> out) override {
    if (const auto cached = lookup(s, true)) {
      const std::size_t n = std::min(cached->size(), out.size());
      std::copy_n(cached->begin(), n, out.begin());
      return n;
    }
    thread_local Bytes scratch;
    fetch(s, scratch);
    const std::size_t n = std::min(scratch.size(), out.size());
    std::copy_n(scratch.begin(), n, out.begin());
    return n;
  }

  std::vector<TierStats> tier_stats() const override {
    std::unique_lock lock(mutex_);
    TierStats mine = counts_.stats("memory", lru_.bytes(), lru_.budget());
    lock.unlock();
    return cache::stacked_on(std::move(mine), *inner_);
  }

  std::vector<CacheHealth> health() const override {
    std::unique_lock lock(mutex_);
    CacheHealth mine = counts_.health("memory", lru_.size());
    lock.unlock();
    return cache::stacked_on(std::move(mine), *inner_);
  }

 private:
  // The miss path: one fetch from the store per sample however many threads
  // miss it at once, cached before the others are let go.
  void fetch(const SampleInfo& s, Bytes& out) {
    bool served_late = false;
    // The version is part of the flight key: a reader of a newer version
    // never receives an older one's bytes.
    const bool joined = flights_.run(s.key + '\0' + s.version, out, [&](Bytes& buffer) {
      // Another thread may have cached it between our look and this flight.
      if (const auto cached = lookup(s, false)) {
        buffer.assign(cached->begin(), cached->end());
        served_late = true;
        return;
      }
      inner_->read(s, buffer);
      remember(s, buffer);
    });
    if (joined || served_late) {
      std::lock_guard lock(mutex_);
      ++counts_.coalesced;
    }
  }

  // The cached bytes of `s` if they are still its version; counts a hit or a
  // miss when `count` (the first look of a read).
  std::shared_ptr<const Bytes> lookup(const SampleInfo& s, bool count) {
    std::shared_ptr<const Bytes> cached;
    std::lock_guard lock(mutex_);
    if (MemoryEntry* entry = lru_.touch(s.key)) {
      if (entry->version == s.version && entry->data->size() == s.size) {
        cached = entry->data;
      } else {
        lru_.remove(s.key);  // the sample changed since it was cached
        ++counts_.invalidated;
      }
    }
    if (count) ++(cached ? counts_.hits : counts_.misses);
    return cached;
  }

  // Inside the fetch, so a reader arriving after the flight ends finds it.
  void remember(const SampleInfo& s, const Bytes& data) {
    std::vector<LruMap::Item> evicted;  // freed after the lock is released
    // A sample whose size differs from the listing would never validate.
    if (data.size() != s.size || data.size() > lru_.budget()) {
      std::lock_guard lock(mutex_);
      ++counts_.not_cached;
      return;
    }
    auto copy = std::make_shared<const Bytes>(data);
    std::lock_guard lock(mutex_);
    lru_.put(s.key, MemoryEntry{s.version, std::move(copy)}, data.size(), evicted);
    counts_.evictions += evicted.size();
  }

  std::unique_ptr<SampleSource> inner_;
  mutable std::mutex mutex_;
  LruMap lru_;
  cache::SingleFlight flights_;
  cache::TierCounters counts_;
};

}  // namespace

std::unique_ptr<CacheTier> make_memory_cache(std::unique_ptr<SampleSource> inner, std::uint64_t budget_bytes) {
  if (!inner) throw std::invalid_argument("make_memory_cache: no inner source");
  if (budget_bytes == 0) {
    throw usage_error("the memory cache size is 0 bytes", "give a size such as --cache-mem 2GiB, or leave the option out");
  }
  return std::make_unique<MemoryCache>(std::move(inner), budget_bytes);
}

std::vector<CacheHealth> cache_health(const SampleSource& source) {
  const auto* tier = dynamic_cast<const CacheTier*>(&source);
  return tier != nullptr ? tier->health() : std::vector<CacheHealth>{};
}

}  // namespace gpufeed::loader
