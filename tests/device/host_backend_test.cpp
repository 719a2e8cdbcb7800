// The host backend's copy engine: copies land byte for byte, in FIFO order;
// copy_async() returns before the copy runs; wait() returns for its own
// ticket while a later copy is still held in the engine; misuse is refused;
// many threads may use it at once; and destroying it with copies queued
// neither hangs nor runs them all.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backend_checks.hpp"
#include "gpufeed/device/device_host.hpp"

namespace gpufeed::loader {
namespace {

using namespace std::chrono_literals;
using testing::all_zero;
using testing::fill;
using testing::slot_holds;

// Holds the copy engine before the copy of one ticket until released.
class EngineGate {
 public:
  explicit EngineGate(std::uint64_t held_ticket) : held_(held_ticket) {}

  HostBackendOptions options() {
    return {[this](std::uint64_t ticket) {
      std::unique_lock lock(mutex_);
      started_.push_back(ticket);
      changed_.notify_all();
      if (ticket == held_) changed_.wait(lock, [this] { return released_; });
    }};
  }
  // Blocks until the engine has reached the held ticket.
  void await_held() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] {
      for (auto t : started_) {
        if (t == held_) return true;
      }
      return false;
    });
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }
  std::vector<std::uint64_t> started() {
    std::lock_guard lock(mutex_);
    return started_;
  }

 private:
  std::uint64_t held_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::uint64_t> started_;
  bool released_ = false;
};

// Runs `f` on another thread and returns true once it finishes. A hang
// aborts the whole suite with a message (a blocked thread cannot be joined,
// and the backend it holds cannot be destroyed).
template <class F>
bool finishes_within(std::chrono::seconds limit, F f) {
  std::packaged_task<void()> task(std::move(f));
  auto done = task.get_future();
  std::thread worker(std::move(task));
  if (done.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "hang: still blocked after %lld s\n", static_cast<long long>(limit.count()));
    std::abort();
  }
  worker.join();
  done.get();  // rethrows a failure
  return true;
}

TEST(HostBackend, CopiesBytesIntoTheSlotAndCountsThem) {
  auto backend = make_host_backend();
  EXPECT_EQ(backend->name(), "host");
  constexpr std::size_t kBytes = (1 << 20) + 123;  // not a page multiple
  PinnedBuffer src = backend->allocate_pinned(kBytes);
  fill(src, 1);
  backend->reserve_device_slots(2, kBytes);
  ASSERT_TRUE(all_zero(backend->device_slot(1), kBytes));

  const auto ticket = backend->copy_async(src, kBytes, 1);
  EXPECT_GT(ticket, 0u);
  backend->wait(ticket);
  EXPECT_TRUE(slot_holds(*backend, 1, src, kBytes));
  EXPECT_TRUE(all_zero(backend->device_slot(0), kBytes));

  const TransferStats stats = backend->transfer_stats();
  EXPECT_EQ(stats.copies, 1u);
  EXPECT_EQ(stats.bytes, kBytes);
  EXPECT_GT(stats.busy_ns, 0u);
  backend->free_pinned(src);
}

TEST(HostBackend, CopyAsyncReturnsBeforeTheCopyRuns) {
  EngineGate gate(1);
  auto backend = make_host_backend(gate.options());
  PinnedBuffer src = backend->allocate_pinned(4096);
  fill(src, 2);
  backend->reserve_device_slots(1, 4096);
  const auto ticket = backend->copy_async(src, 4096, 0);  // must not block on the held engine
  gate.await_held();
  EXPECT_TRUE(all_zero(backend->device_slot(0), 4096));
  EXPECT_EQ(backend->transfer_stats().copies, 0u);
  gate.release();
  backend->wait(ticket);
  EXPECT_TRUE(slot_holds(*backend, 0, src, 4096));
  backend->free_pinned(src);
}

// The property the pipeline rests on: a step waiting for batch t never waits
// for batch t+1's transfer. The engine is held before the later, big copy;
// the earlier copy's wait must still return, with its bytes in place and the
// later slot untouched.
TEST(HostBackend, WaitReturnsForItsTicketWhileALaterBigCopyIsInFlight) {
  EngineGate gate(2);
  auto backend = make_host_backend(gate.options());
  constexpr std::size_t kSmall = 64 << 10, kBig = 64 << 20;
  PinnedBuffer small = backend->allocate_pinned(kSmall);
  PinnedBuffer big = backend->allocate_pinned(kBig);
  fill(small, 3);
  fill(big, 4);
  backend->reserve_device_slots(2, kBig);

  const auto first = backend->copy_async(small, kSmall, 0);
  const auto second = backend->copy_async(big, kBig, 1);
  EXPECT_LT(first, second);
  EXPECT_TRUE(finishes_within(30s, [&] { backend->wait(first); })) << "wait(first) waited for the held later copy";
  EXPECT_TRUE(slot_holds(*backend, 0, small, kSmall));
  gate.await_held();
  EXPECT_TRUE(all_zero(backend->device_slot(1), kBig)) << "the later copy ran although the engine was held";

  gate.release();
  backend->wait(second);
  EXPECT_TRUE(slot_holds(*backend, 1, big, kBig));
  // Waiting again, or on an earlier ticket, returns at once.
  backend->wait(first);
  backend->wait(second);
  backend->free_pinned(small);
  backend->free_pinned(big);
}

TEST(HostBackend, RunsCopiesInTheOrderTheyWereQueued) {
  EngineGate gate(0);  // holds nothing; records the order
  auto backend = make_host_backend(gate.options());
  constexpr int kCopies = 20;
  constexpr std::size_t kBytes = 256 << 10;
  std::vector<PinnedBuffer> sources;
  for (int i = 0; i < kCopies; ++i) {
    sources.push_back(backend->allocate_pinned(kBytes));
    fill(sources.back(), 100 + static_cast<unsigned>(i));
  }
  backend->reserve_device_slots(1, kBytes);
  std::uint64_t last = 0;
  for (auto& s : sources) last = backend->copy_async(s, kBytes, 0);  // all into one slot
  backend->wait(last);

  const auto order = gate.started();
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kCopies));
  for (std::size_t i = 1; i < order.size(); ++i) EXPECT_LT(order[i - 1], order[i]);
  // FIFO: the last copy queued is the one left in the slot.
  EXPECT_TRUE(slot_holds(*backend, 0, sources.back(), kBytes));
  EXPECT_EQ(backend->transfer_stats().copies, static_cast<std::uint64_t>(kCopies));
  for (auto& s : sources) backend->free_pinned(s);
}

TEST(HostBackend, RefusesMisuse) {
  auto backend = make_host_backend();
  PinnedBuffer src = backend->allocate_pinned(8192);
  EXPECT_THROW(backend->copy_async(src, 10, 0), std::invalid_argument);  // no slots yet
  EXPECT_THROW(backend->reserve_device_slots(0, 4096), std::invalid_argument);
  EXPECT_THROW(backend->reserve_device_slots(2, 0), std::invalid_argument);
  backend->reserve_device_slots(2, 4096);
  EXPECT_THROW(backend->device_slot(2), std::invalid_argument);
  EXPECT_THROW(backend->device_slot(-1), std::invalid_argument);
  EXPECT_THROW(backend->copy_async(src, 8192, 0), std::invalid_argument);  // bigger than the slot
  EXPECT_THROW(backend->copy_async(src, 10000, 0), std::invalid_argument);  // bigger than the buffer
  EXPECT_THROW(backend->wait(0), std::invalid_argument);
  EXPECT_THROW(backend->wait(1), std::invalid_argument);  // never handed out
  const auto t = backend->copy_async(src, 4096, 1);
  EXPECT_THROW(backend->wait(t + 1), std::invalid_argument);
  backend->wait(t);
  backend->free_pinned(src);
}

TEST(HostBackend, ManyThreadsCopyAndWaitAtOnce) {
  auto backend = make_host_backend();
  testing::expect_copies_from_threads_land(*backend, 4, 50, 32 << 10);
  EXPECT_EQ(backend->pinned_bytes(), 0u);
}

// The copy in progress finishes; the queued ones are dropped, and the
// destructor returns promptly.
TEST(HostBackend, DestructorWithCopiesQueuedNeitherHangsNorRunsThemAll) {
  EngineGate gate(1);
  auto backend = make_host_backend(gate.options());
  constexpr int kCopies = 40;
  constexpr std::size_t kBytes = 8 << 20;
  PinnedBuffer src = backend->allocate_pinned(kBytes);
  fill(src, 5);
  backend->reserve_device_slots(1, kBytes);
  for (int i = 0; i < kCopies; ++i) backend->copy_async(src, kBytes, 0);
  gate.await_held();
  std::thread releaser([&] {
    std::this_thread::sleep_for(100ms);  // let the destructor drop the queue first
    gate.release();
  });
  EXPECT_TRUE(finishes_within(30s, [&] { backend.reset(); })) << "the destructor hung";
  releaser.join();
  EXPECT_LT(gate.started().size(), static_cast<std::size_t>(kCopies)) << "queued copies ran during shutdown";
}

TEST(HostBackend, DestructorReleasesBuffersNotFreed) {
  // No engine hold: copies may or may not have run; nothing may leak or
  // crash (the sanitizer build checks the former).
  auto backend = make_host_backend();
  PinnedBuffer src = backend->allocate_pinned(1 << 20);
  backend->reserve_device_slots(2, 1 << 20);
  for (int i = 0; i < 16; ++i) backend->copy_async(src, 1 << 20, i % 2);
  EXPECT_TRUE(finishes_within(30s, [&] { backend.reset(); }));
}

// The cpu backend: nothing moves, nothing is page-locked, tickets are still
// checked so a pipeline bug surfaces here as it would on a GPU.
TEST(CpuBackend, CopiesNothingAndSaysSo) {
  auto backend = make_cpu_backend();
  EXPECT_EQ(backend->name(), "cpu");
  EXPECT_FALSE(backend->transfers());
  PinnedBuffer b = backend->allocate_pinned(1000);
  ASSERT_NE(b.data, nullptr);
  EXPECT_FALSE(b.page_locked);
  std::memset(b.data, 7, b.bytes);  // the whole buffer is usable
  EXPECT_EQ(backend->pinned_bytes(), 0u);
  backend->reserve_device_slots(2, 1000);
  EXPECT_EQ(backend->device_slot(0), nullptr);
  const auto t1 = backend->copy_async(b, 1000, 0);
  const auto t2 = backend->copy_async(b, 1000, 1);
  EXPECT_LT(t1, t2);
  backend->wait(t2);
  EXPECT_THROW(backend->wait(t2 + 1), std::invalid_argument);
  EXPECT_THROW(backend->reserve_device_slots(0, 1), std::invalid_argument);
  EXPECT_EQ(backend->transfer_stats().copies, 0u);
  backend->free_pinned(b);
}

TEST(HostBackend, TransfersLikeAGpu) { EXPECT_TRUE(make_host_backend()->transfers()); }

}  // namespace
}  // namespace gpufeed::loader
