// The host backend: a GPU stand-in for machines without one. Device slots are
// ordinary memory; one copy thread is the DMA engine, taking copies in the
// order they were queued, as a single transfer stream does. Tickets are
// numbered from 1 in queue order, so "ticket t is done" is one counter
// (completed_ >= t) and wait(t) never waits for a later copy.
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "gpufeed/device/device_host.hpp"
#include "page_locked_memory.hpp"

namespace gpufeed::loader {
namespace {

struct CopyJob {
  std::uint64_t ticket = 0;
  std::byte* dst = nullptr;
  const std::byte* src = nullptr;
  std::size_t bytes = 0;
};

class HostBackend final : public DeviceBackend {
 public:
  explicit HostBackend(HostBackendOptions options)
      : options_(std::move(options)), engine_([this] { run_copies(); }) {}

  ~HostBackend() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      // Queued copies are dropped, not run: their buffers may already be
      // gone, and a shutdown must not wait for gigabytes of copies. The copy
      // in progress, if any, finishes first (join below).
      queue_.clear();
    }
    work_.notify_all();
    engine_.join();
  }
  HostBackend(const HostBackend&) = delete;
  HostBackend& operator=(const HostBackend&) = delete;

  std::string name() const override { return "host"; }

  std::string description() const override {
    const std::string refused = allocator_.lock_failure();
    if (refused.empty()) return "host (no GPU): copy thread as DMA engine, page-locked buffers (mlock)";
    return fmt::format("host (no GPU): copy thread as DMA engine, buffers NOT page-locked: {}", refused);
  }

  PinnedBuffer allocate_pinned(std::size_t bytes) override { return allocator_.allocate(bytes); }
  void free_pinned(PinnedBuffer buffer) noexcept override { allocator_.free(buffer); }
  std::uint64_t pinned_bytes() const override { return allocator_.allocated_bytes(); }

  void reserve_device_slots(int count, std::size_t bytes_each) override {
    if (count <= 0 || bytes_each == 0) {
      throw std::invalid_argument(fmt::format("host backend: cannot reserve {} device slots of {} bytes", count,
                                              bytes_each));
    }
    std::unique_lock lock(mutex_);
    // Replacing slots under a copy that writes into them would be a
    // use-after-free: let the engine go idle first.
    done_.wait(lock, [this] { return completed_ == issued_; });
    slots_.assign(static_cast<std::size_t>(count), std::vector<std::byte>(bytes_each));
  }

  void* device_slot(int slot) override {
    std::lock_guard lock(mutex_);
    return checked_slot(slot).data();
  }

  std::uint64_t copy_async(const PinnedBuffer& src, std::size_t bytes, int slot) override {
    std::uint64_t ticket = 0;
    {
      std::lock_guard lock(mutex_);
      auto& dst = checked_slot(slot);
      if (bytes > src.bytes || bytes > dst.size() || (bytes > 0 && src.data == nullptr)) {
        throw std::invalid_argument(fmt::format(
            "host backend: copy of {} bytes from a {}-byte buffer into a {}-byte slot", bytes, src.bytes, dst.size()));
      }
      ticket = ++issued_;
      queue_.push_back({ticket, dst.data(), src.data, bytes});
    }
    work_.notify_one();
    return ticket;
  }

  void wait(std::uint64_t ticket) override {
    std::unique_lock lock(mutex_);
    if (ticket == 0 || ticket > issued_) {
      throw std::invalid_argument(fmt::format("host backend: wait on ticket {}, which copy_async never returned",
                                              ticket));
    }
    done_.wait(lock, [&] { return completed_ >= ticket; });
  }

  TransferStats transfer_stats() const override {
    std::lock_guard lock(mutex_);
    return stats_;
  }

 private:
  std::vector<std::byte>& checked_slot(int slot) {
    if (slot < 0 || static_cast<std::size_t>(slot) >= slots_.size()) {
      throw std::invalid_argument(
          fmt::format("host backend: device slot {} does not exist ({} reserved)", slot, slots_.size()));
    }
    return slots_[static_cast<std::size_t>(slot)];
  }

  // The copy thread.
  void run_copies() {
    std::unique_lock lock(mutex_);
    for (;;) {
      work_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stopping, nothing left
      const CopyJob job = queue_.front();
      queue_.pop_front();
      lock.unlock();
      if (options_.before_copy) options_.before_copy(job.ticket);
      const auto start = std::chrono::steady_clock::now();
      if (job.bytes > 0) std::memcpy(job.dst, job.src, job.bytes);
      const auto busy = std::chrono::steady_clock::now() - start;
      lock.lock();
      completed_ = job.ticket;
      stats_.copies += 1;
      stats_.bytes += job.bytes;
      stats_.busy_ns += static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(busy).count());
      done_.notify_all();
    }
    // Dropped copies count as finished, so nothing can block on them.
    completed_ = issued_;
    done_.notify_all();
  }

  HostBackendOptions options_;
  device::PageLockedAllocator allocator_;

  mutable std::mutex mutex_;
  std::condition_variable work_;  // the engine: a copy was queued, or stop
  std::condition_variable done_;  // waiters: completed_ moved
  std::deque<CopyJob> queue_;
  std::vector<std::vector<std::byte>> slots_;
  std::uint64_t issued_ = 0;     // last ticket handed out
  std::uint64_t completed_ = 0;  // last ticket copied (FIFO: all before it too)
  TransferStats stats_;
  bool stopping_ = false;

  std::thread engine_;  // last: starts after everything it uses exists
};

}  // namespace

std::unique_ptr<DeviceBackend> make_host_backend(HostBackendOptions options) {
  return std::make_unique<HostBackend>(std::move(options));
}

}  // namespace gpufeed::loader
