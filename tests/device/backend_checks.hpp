#pragma once
// Checks that every DeviceBackend's tests share: seeded buffer contents,
// what a device slot holds, and many threads copying at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "gpufeed/loader/device_backend.hpp"

namespace gpufeed::testing {

// Fills a buffer with bytes from a seeded generator.
inline void fill(loader::PinnedBuffer& b, unsigned seed) {
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < b.bytes; i += 8) {
    const std::uint64_t word = rng();
    std::memcpy(b.data + i, &word, std::min<std::size_t>(8, b.bytes - i));
  }
}

inline bool all_zero(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  return std::all_of(p, p + bytes, [](unsigned char c) { return c == 0; });
}

inline bool slot_holds(loader::DeviceBackend& backend, int slot, const loader::PinnedBuffer& expected, std::size_t bytes) {
  return std::memcmp(backend.device_slot(slot), expected.data, bytes) == 0;
}

// `threads` threads, each with its own pinned buffer and device slot, copy
// `copies_each` differently seeded buffers of `bytes` and wait for each.
// Expects every copy to land byte for byte and the backend's transfer
// counters to count them all.
inline void expect_copies_from_threads_land(loader::DeviceBackend& backend, int threads, int copies_each, std::size_t bytes) {
  backend.reserve_device_slots(threads, bytes);
  std::atomic<int> wrong{0};
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&, t] {
      loader::PinnedBuffer src = backend.allocate_pinned(bytes);
      for (int i = 0; i < copies_each; ++i) {
        fill(src, static_cast<unsigned>(t * 1000 + i));
        backend.wait(backend.copy_async(src, bytes, t));
        if (!slot_holds(backend, t, src, bytes)) ++wrong;
      }
      backend.free_pinned(src);
    });
  }
  for (auto& t : running) t.join();
  EXPECT_EQ(wrong.load(), 0);
  const auto total = static_cast<std::uint64_t>(threads) * static_cast<std::uint64_t>(copies_each);
  const auto stats = backend.transfer_stats();
  EXPECT_EQ(stats.copies, total);
  EXPECT_EQ(stats.bytes, total * bytes);
}

}  // namespace gpufeed::testing
