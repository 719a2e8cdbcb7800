#pragma once
// Fakes for the loader's interfaces, for unit tests of the pipeline: a store
// whose samples carry their own index, a device that copies at once, and a
// step that checks and records what it is given.
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "gpufeed/loader/device_backend.hpp"
#include "gpufeed/loader/sample_source.hpp"
#include "gpufeed/loader/step.hpp"

namespace gpufeed::testing {

// Sample i is 16 bytes holding i; reading takes `latency`.
class FakeSource final : public loader::SampleSource {
 public:
  explicit FakeSource(std::size_t count, std::chrono::microseconds latency = {}) : count_(count), latency_(latency) {}
  std::string kind() const override { return "fake"; }
  std::string describe() const override { return "fake store"; }
  std::string storage_type() const override { return "fake"; }
  std::vector<loader::SampleInfo> list() override {
    std::vector<loader::SampleInfo> out;
    for (std::size_t i = 0; i < count_; ++i) out.push_back({fmt::format("s/{}", i), 16, "v1"});
    return out;
  }
  void stat(const loader::SampleInfo&) override {
    ++stats;
    std::this_thread::sleep_for(latency_);
  }
  void open(const loader::SampleInfo&) override {
    ++opens;
    std::this_thread::sleep_for(latency_);
  }
  std::atomic<int> stats{0}, opens{0};  // calls, for the access-pattern tests
  void read(const loader::SampleInfo& s, std::vector<std::byte>& out) override {
    const int now = ++concurrent_;
    int seen = max_concurrent_.load();
    while (now > seen && !max_concurrent_.compare_exchange_weak(seen, now)) {
    }
    if (latency_.count()) std::this_thread::sleep_for(latency_);
    const std::uint64_t index = std::stoull(s.key.substr(2));
    {
      std::lock_guard lock(mu_);
      reader_of_[index] = std::this_thread::get_id();
      ++reads_[index];
      log_.emplace_back(index, std::this_thread::get_id());
    }
    --concurrent_;
    if (bad_.count(index)) throw loader::SampleError(s.key, fmt::format("sample {} is corrupt", s.key));
    out.assign(16, std::byte{0});
    std::memcpy(out.data(), &index, sizeof index);
  }

  void mark_bad(std::uint64_t index) { bad_.insert(index); }
  int max_concurrent() const { return max_concurrent_.load(); }
  std::map<std::uint64_t, std::thread::id> readers() const {
    std::lock_guard lock(mu_);
    return reader_of_;
  }
  std::map<std::uint64_t, int> reads() const {
    std::lock_guard lock(mu_);
    return reads_;
  }
  // Every read in the order it happened: (sample index, reading thread).
  std::vector<std::pair<std::uint64_t, std::thread::id>> read_log() const {
    std::lock_guard lock(mu_);
    return log_;
  }

 private:
  std::size_t count_;
  std::chrono::microseconds latency_;
  std::set<std::uint64_t> bad_;
  std::atomic<int> concurrent_{0};
  std::atomic<int> max_concurrent_{0};
  mutable std::mutex mu_;
  std::map<std::uint64_t, std::thread::id> reader_of_;
  std::map<std::uint64_t, int> reads_;
  std::vector<std::pair<std::uint64_t, std::thread::id>> log_;
};

// Copies synchronously; every buffer is "page-locked".
// A GPU-like fake by default; with transfers = false, a cpu-backend-like one
// that copies nothing and has no slots (the step must read the host batch).
class FakeDevice final : public loader::DeviceBackend {
 public:
  explicit FakeDevice(bool transfers = true) : transfers_(transfers) {}
  std::string name() const override { return "fake"; }
  std::string description() const override { return "fake device"; }
  loader::PinnedBuffer allocate_pinned(std::size_t bytes) override {
    pinned_ += bytes;
    return {new std::byte[bytes], bytes, true};
  }
  void free_pinned(loader::PinnedBuffer b) noexcept override {
    pinned_ -= b.bytes;
    delete[] b.data;
  }
  std::uint64_t pinned_bytes() const override { return pinned_; }
  void reserve_device_slots(int count, std::size_t bytes) override {
    slots_.assign(static_cast<std::size_t>(count), std::vector<std::byte>(bytes));
  }
  void* device_slot(int slot) override { return transfers_ ? slots_[static_cast<std::size_t>(slot)].data() : nullptr; }
  std::uint64_t copy_async(const loader::PinnedBuffer& src, std::size_t bytes, int slot) override {
    if (!transfers_) return ++tickets_;
    std::memcpy(slots_[static_cast<std::size_t>(slot)].data(), src.data, bytes);
    stats_.copies++;
    stats_.bytes += bytes;
    stats_.busy_ns += 1000;
    return ++tickets_;
  }
  void wait(std::uint64_t) override {}
  loader::TransferStats transfer_stats() const override { return stats_; }
  bool transfers() const override { return transfers_; }

 private:
  bool transfers_;
  std::uint64_t pinned_ = 0;
  std::vector<std::vector<std::byte>> slots_;
  std::uint64_t tickets_ = 0;
  loader::TransferStats stats_;
};

// Reads the sample indices out of the device copy of each batch.
class RecordingStep final : public loader::StepRunner {
 public:
  explicit RecordingStep(std::chrono::microseconds duration = {}) : duration_(duration) {}
  std::string describe() const override { return "recording step"; }
  void run(const loader::StepInput& in) override {
    const std::size_t sample_bytes = in.bytes / static_cast<std::size_t>(in.batch_size);
    std::vector<std::uint64_t> batch;
    for (int j = 0; j < in.batch_size; ++j) {
      std::uint64_t index = 0;
      std::memcpy(&index, static_cast<const std::byte*>(in.device) + static_cast<std::size_t>(j) * sample_bytes, sizeof index);
      batch.push_back(index);
    }
    batches.push_back(std::move(batch));
    if (duration_.count()) std::this_thread::sleep_for(duration_);
  }
  std::vector<std::vector<std::uint64_t>> batches;

 private:
  std::chrono::microseconds duration_;
};

}  // namespace gpufeed::testing
