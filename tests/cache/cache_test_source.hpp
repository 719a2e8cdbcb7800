#pragma once
// A fake inner store for the cache tier tests: it counts calls, can change a
// sample's version, fail a key, return the wrong size or take its time. The
// bytes of a sample follow from its key, version and size, so any read can
// be checked.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "gpufeed/loader/sample_source.hpp"

namespace gpufeed::loader::testing {

using Bytes = std::vector<std::byte>;

// Keys with a '/', a space and non-ASCII UTF-8, as real datasets have.
inline std::string fake_key(int i) { return fmt::format("train/n{:02d}/sample {:04d} – ü.jpg", i % 7, i); }

inline Bytes expected_bytes(const SampleInfo& s) {
  Bytes bytes(s.size);
  std::uint64_t x = std::hash<std::string>{}(s.key + '\0' + s.version) | 1;
  for (auto& b : bytes) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<std::byte>(x);
  }
  return bytes;
}

class FakeSource final : public SampleSource {
 public:
  FakeSource(int count, std::uint64_t size) {
    for (int i = 0; i < count; ++i) samples_.push_back({fake_key(i), size, "v1"});
  }

  std::string kind() const override { return "fake"; }
  std::string describe() const override { return "fake store"; }
  std::string storage_type() const override { return "fakefs"; }
  std::vector<SampleInfo> list() override {
    std::lock_guard lock(mutex_);
    return samples_;
  }
  void stat(const SampleInfo&) override { ++stats; }
  void open(const SampleInfo&) override { ++opens; }

  void read(const SampleInfo& s, Bytes& out) override {
    ++reads;
    {
      std::lock_guard lock(mutex_);
      ++reads_by_key_[s.key];
      if (failing_.count(s.key) != 0) throw SampleError(s.key, "cannot read " + s.key + ": injected failure");
    }
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    SampleInfo as_stored = s;
    as_stored.size += static_cast<std::uint64_t>(extra_bytes.load());
    out = expected_bytes(as_stored);
  }

  SampleInfo sample(int i) const {
    std::lock_guard lock(mutex_);
    return samples_.at(static_cast<std::size_t>(i));
  }
  // The store now holds a different version of sample i.
  void set_version(int i, const std::string& version) {
    std::lock_guard lock(mutex_);
    samples_.at(static_cast<std::size_t>(i)).version = version;
  }
  void fail(const std::string& key) {
    std::lock_guard lock(mutex_);
    failing_.insert(key);
  }
  int reads_of(const std::string& key) const {
    std::lock_guard lock(mutex_);
    const auto it = reads_by_key_.find(key);
    return it == reads_by_key_.end() ? 0 : it->second;
  }

  std::atomic<int> reads{0};
  std::atomic<int> stats{0};
  std::atomic<int> opens{0};
  std::atomic<int> extra_bytes{0};  // returned beyond the listed size
  std::chrono::milliseconds delay{0};

 private:
  mutable std::mutex mutex_;
  std::vector<SampleInfo> samples_;
  std::set<std::string> failing_;
  std::map<std::string, int> reads_by_key_;
};

}  // namespace gpufeed::loader::testing
