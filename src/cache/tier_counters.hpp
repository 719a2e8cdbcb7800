#pragma once
// The counters every cache tier keeps, and how a tier's report stacks on its
// inner tiers' (this tier first, as tier_stats() and health() promise).
// The tier guards them with its own mutex.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpufeed/cache/cache.hpp"

namespace gpufeed::loader::cache {

struct TierCounters {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;
  std::uint64_t coalesced = 0;
  std::uint64_t invalidated = 0;
  std::uint64_t not_cached = 0;

  TierStats stats(std::string tier, std::uint64_t bytes_cached, std::uint64_t capacity_bytes) const {
    TierStats s{std::move(tier)};
    s.hits = hits;
    s.misses = misses;
    s.bytes_cached = bytes_cached;
    s.capacity_bytes = capacity_bytes;
    s.evictions = evictions;
    return s;
  }
  CacheHealth health(std::string tier, std::uint64_t entries) const {
    CacheHealth h;
    h.tier = std::move(tier);
    h.coalesced = coalesced;
    h.invalidated = invalidated;
    h.not_cached = not_cached;
    h.entries = entries;
    return h;
  }
};

inline std::vector<TierStats> stacked_on(TierStats mine, const SampleSource& inner) {
  std::vector<TierStats> all{std::move(mine)};
  for (auto& t : inner.tier_stats()) all.push_back(std::move(t));
  return all;
}

inline std::vector<CacheHealth> stacked_on(CacheHealth mine, const SampleSource& inner) {
  std::vector<CacheHealth> all{std::move(mine)};
  for (auto& h : cache_health(inner)) all.push_back(std::move(h));
  return all;
}

}  // namespace gpufeed::loader::cache
