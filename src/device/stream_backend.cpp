// The CUDA and HIP backends: one class over the runtime table of
// gpu_runtime.hpp, since both runtimes have the same shape.
//
// Copies go on one dedicated non-blocking stream (it never synchronises with
// the legacy default stream, where a step's kernels may run). Each copy is
// bracketed by two events: `done`, the one wait() synchronises on, so a wait
// never covers a later batch's copy; and `start`, used only to time the copy
// on the device for transfer_stats().busy_ns. Tickets are numbered in stream
// order, so once ticket t is done every earlier one is too; their events go
// back to a pool.
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "gpu_runtime.hpp"
#include "gpufeed/error.hpp"
#include "stream_backend.hpp"

namespace gpufeed::loader::device {
namespace {

std::string human_bytes(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1 << 30));
  if (bytes >= (std::size_t{1} << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
  return fmt::format("{} bytes", bytes);
}

struct EventPair {
  gpufeed_gpu_event start = nullptr;
  gpufeed_gpu_event done = nullptr;
};

struct PendingCopy {
  EventPair events;
  std::size_t bytes = 0;
  int waiters = 0;  // threads inside wait() on this ticket: its events stay out of the pool
};

class StreamBackend final : public DeviceBackend {
 public:
  StreamBackend(GpuRuntime rt, gpufeed_gpu_stream stream, std::string device_name)
      : rt_(std::move(rt)), stream_(stream), device_name_(std::move(device_name)) {
    int runtime = 0, driver = 0;
    if (rt_.runtime_get_version(&runtime) != GPUFEED_GPU_SUCCESS) runtime = 0;
    if (rt_.driver_get_version(&driver) != GPUFEED_GPU_SUCCESS) driver = 0;
    description_ = fmt::format("{}, {} runtime {}, driver {} ({})", device_name_, rt_.flavor->title,
                               format_runtime_version(*rt_.flavor, runtime),
                               format_runtime_version(*rt_.flavor, driver), rt_.library);
  }

  // Nothing here may throw: the return codes are read but only the stream
  // synchronisation matters (it makes every copy finish before its memory
  // goes away); a failing free at shutdown leaves nothing to act on.
  ~StreamBackend() override {
    rt_.stream_synchronize(stream_);
    for (auto& [ticket, pending] : pending_) release_events(pending.events);
    for (const EventPair& e : event_pool_) {
      rt_.event_destroy(e.start);
      rt_.event_destroy(e.done);
    }
    for (void* slot : slots_) rt_.device_free(slot);
    for (const auto& [data, bytes] : pinned_) rt_.host_free(data);
    rt_.stream_destroy(stream_);
  }
  StreamBackend(const StreamBackend&) = delete;
  StreamBackend& operator=(const StreamBackend&) = delete;

  std::string name() const override { return std::string(rt_.flavor->backend); }
  std::string description() const override { return description_; }

  PinnedBuffer allocate_pinned(std::size_t bytes) override {
    if (bytes == 0) return {nullptr, 0, true};
    void* data = nullptr;
    check(rt_.host_alloc(&data, bytes, GPUFEED_GPU_HOST_ALLOC_DEFAULT), rt_.flavor->host_alloc,
          fmt::format("page-locked host memory ({})", human_bytes(bytes)),
          "lower the batch size or prefetch depth; page-locked memory is limited by host RAM");
    if (data == nullptr) {
      throw runtime_error(fmt::format("{}: {} succeeded but returned no memory", rt_.library, rt_.flavor->host_alloc));
    }
    std::lock_guard lock(mutex_);
    pinned_[static_cast<std::byte*>(data)] = bytes;
    pinned_bytes_ += bytes;
    return {static_cast<std::byte*>(data), bytes, true};
  }

  void free_pinned(PinnedBuffer buffer) noexcept override {
    if (buffer.data == nullptr) return;
    {
      std::lock_guard lock(mutex_);
      auto it = pinned_.find(buffer.data);
      if (it == pinned_.end()) return;
      pinned_bytes_ -= it->second;
      pinned_.erase(it);
    }
    rt_.host_free(buffer.data);  // noexcept: a failure here leaves nothing to do
  }

  std::uint64_t pinned_bytes() const override {
    std::lock_guard lock(mutex_);
    return pinned_bytes_;
  }

  void reserve_device_slots(int count, std::size_t bytes_each) override {
    if (count <= 0 || bytes_each == 0) {
      throw std::invalid_argument(
          fmt::format("{} backend: cannot reserve {} device slots of {} bytes", name(), count, bytes_each));
    }
    std::lock_guard lock(mutex_);
    // Copies may still land in the old slots.
    check(rt_.stream_synchronize(stream_), rt_.flavor->stream_synchronize, "the transfer stream");
    free_slots();
    for (int i = 0; i < count; ++i) {
      void* slot = nullptr;
      const gpufeed_gpu_error status = rt_.device_alloc(&slot, bytes_each);
      if (status != GPUFEED_GPU_SUCCESS || slot == nullptr) {
        free_slots();
        fail(rt_.flavor->device_alloc, status,
             fmt::format("device slot {} of {} ({} each)", i, count, human_bytes(bytes_each)),
             "lower the batch size or the number of device slots; other processes may hold device memory");
      }
      slots_.push_back(slot);
    }
    slot_bytes_ = bytes_each;
  }

  void* device_slot(int slot) override {
    std::lock_guard lock(mutex_);
    return slots_[checked_slot(slot)];
  }

  std::uint64_t copy_async(const PinnedBuffer& src, std::size_t bytes, int slot) override {
    // One lock over the whole enqueue: tickets must follow stream order.
    std::lock_guard lock(mutex_);
    void* dst = slots_[checked_slot(slot)];
    if (bytes > src.bytes || bytes > slot_bytes_ || (bytes > 0 && src.data == nullptr)) {
      throw std::invalid_argument(fmt::format("{} backend: copy of {} bytes from a {}-byte buffer into a {}-byte slot",
                                              name(), bytes, src.bytes, slot_bytes_));
    }
    const EventPair events = take_events();
    gpufeed_gpu_error status = rt_.event_record(events.start, stream_);
    const char* call = rt_.flavor->event_record;
    if (status == GPUFEED_GPU_SUCCESS) {
      call = rt_.flavor->memcpy_async;
      status = rt_.memcpy_async(dst, src.data, bytes, GPUFEED_GPU_MEMCPY_HOST_TO_DEVICE, stream_);
    }
    if (status == GPUFEED_GPU_SUCCESS) {
      call = rt_.flavor->event_record;
      status = rt_.event_record(events.done, stream_);
    }
    if (status != GPUFEED_GPU_SUCCESS) {
      // Events recorded on a stream that then failed are not reused.
      release_events(events);
      fail(call, status, fmt::format("copy of {} to device slot {}", human_bytes(bytes), slot));
    }
    const std::uint64_t ticket = ++issued_;
    pending_[ticket] = {events, bytes, 0};
    return ticket;
  }

  void wait(std::uint64_t ticket) override {
    gpufeed_gpu_event done = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (ticket == 0 || ticket > issued_) {
        throw std::invalid_argument(
            fmt::format("{} backend: wait on ticket {}, which copy_async never returned", name(), ticket));
      }
      if (ticket <= completed_) return;
      PendingCopy& pending = pending_.at(ticket);
      ++pending.waiters;
      done = pending.events.done;
    }
    // Outside the lock: other threads keep queueing copies meanwhile.
    const gpufeed_gpu_error status = rt_.event_synchronize(done);
    std::lock_guard lock(mutex_);
    --pending_.at(ticket).waiters;
    if (status != GPUFEED_GPU_SUCCESS) fail(rt_.flavor->event_synchronize, status, "a copy to the device");
    completed_ = std::max(completed_, ticket);
    retire_completed();
  }

  TransferStats transfer_stats() const override {
    std::lock_guard lock(mutex_);
    // Copies nobody waited for yet may be done too: ask their events, oldest
    // first, and stop at the first that is still running (stream order).
    for (const auto& [ticket, pending] : pending_) {
      if (ticket <= completed_) continue;
      if (rt_.event_query(pending.events.done) != GPUFEED_GPU_SUCCESS) break;
      completed_ = ticket;
    }
    retire_completed();
    return stats_;
  }

 private:
  std::size_t checked_slot(int slot) const {
    if (slot < 0 || static_cast<std::size_t>(slot) >= slots_.size()) {
      throw std::invalid_argument(
          fmt::format("{} backend: device slot {} does not exist ({} reserved)", name(), slot, slots_.size()));
    }
    return static_cast<std::size_t>(slot);
  }

  // Throws the runtime's failure as a gpufeed::Error naming the call, what
  // it was for, and the library.
  [[noreturn]] void fail(const char* call, gpufeed_gpu_error status, const std::string& what,
                         std::string hint = {}) const {
    throw runtime_error(fmt::format("{} ({}): {} for {}", rt_.flavor->title, rt_.library, rt_.failed(call, status), what),
                        std::move(hint));
  }
  void check(gpufeed_gpu_error status, const char* call, const std::string& what, std::string hint = {}) const {
    if (status != GPUFEED_GPU_SUCCESS) fail(call, status, what, std::move(hint));
  }

  // Caller holds mutex_.
  EventPair take_events() {
    if (!event_pool_.empty()) {
      const EventPair e = event_pool_.back();
      event_pool_.pop_back();
      return e;
    }
    EventPair e;
    check(rt_.event_create_with_flags(&e.start, GPUFEED_GPU_EVENT_DEFAULT), rt_.flavor->event_create_with_flags,
          "a transfer event");
    const gpufeed_gpu_error status = rt_.event_create_with_flags(&e.done, GPUFEED_GPU_EVENT_DEFAULT);
    if (status != GPUFEED_GPU_SUCCESS) {
      rt_.event_destroy(e.start);
      fail(rt_.flavor->event_create_with_flags, status, "a transfer event");
    }
    return e;
  }

  void release_events(const EventPair& e) {
    rt_.event_destroy(e.start);
    rt_.event_destroy(e.done);
  }

  // Caller holds mutex_. Counts every copy up to completed_ and returns its
  // events to the pool, except those another thread is still waiting on
  // (that thread retires them when it returns).
  void retire_completed() const {
    for (auto it = pending_.begin(); it != pending_.end() && it->first <= completed_;) {
      if (it->second.waiters > 0) {
        ++it;
        continue;
      }
      float ms = 0;
      if (rt_.event_elapsed_time(&ms, it->second.events.start, it->second.events.done) == GPUFEED_GPU_SUCCESS &&
          ms > 0) {
        stats_.busy_ns += static_cast<std::uint64_t>(static_cast<double>(ms) * 1e6);
      }
      stats_.copies += 1;
      stats_.bytes += it->second.bytes;
      event_pool_.push_back(it->second.events);
      it = pending_.erase(it);
    }
  }

  void free_slots() {
    for (void* slot : slots_) rt_.device_free(slot);
    slots_.clear();
    slot_bytes_ = 0;
  }

  GpuRuntime rt_;
  gpufeed_gpu_stream stream_;
  std::string device_name_;
  std::string description_;

  mutable std::mutex mutex_;
  std::unordered_map<std::byte*, std::size_t> pinned_;
  std::uint64_t pinned_bytes_ = 0;
  std::vector<void*> slots_;
  std::size_t slot_bytes_ = 0;
  // Retiring finished copies is bookkeeping that transfer_stats() (const)
  // does too, hence mutable.
  mutable std::vector<EventPair> event_pool_;
  mutable std::map<std::uint64_t, PendingCopy> pending_;  // ticket order = stream order
  std::uint64_t issued_ = 0;
  mutable std::uint64_t completed_ = 0;
  mutable TransferStats stats_;
};

}  // namespace

std::unique_ptr<DeviceBackend> open_stream_backend(const RuntimeFlavor& flavor,
                                                   const std::vector<std::string>& libraries, std::string& reason) {
  std::optional<GpuRuntime> loaded;
  std::string load_failure;
  for (const auto& library : libraries) {
    loaded = load_gpu_runtime(flavor, library, load_failure);
    if (loaded) break;
  }
  if (!loaded) {
    // One candidate (an override): its own loader message. Several: which
    // were tried, since the last dlerror() alone would hide the others.
    if (libraries.size() == 1) {
      reason = load_failure;
    } else {
      std::string tried;
      for (const auto& library : libraries) tried += (tried.empty() ? "" : ", ") + library;
      reason = fmt::format("no {} runtime found (tried {})", flavor.title, tried);
    }
    return nullptr;
  }
  GpuRuntime& rt = *loaded;
  int count = 0;  // stays 0 when the runtime fails without writing it
  if (const auto status = rt.get_device_count(&count); status != GPUFEED_GPU_SUCCESS) {
    reason = fmt::format("no device: {} in {}", rt.failed(flavor.get_device_count, status), rt.library);
    return nullptr;
  }
  if (count <= 0) {
    reason = fmt::format("no device: {} found none in {}", flavor.get_device_count, rt.library);
    return nullptr;
  }
  if (const auto status = rt.set_device(0); status != GPUFEED_GPU_SUCCESS) {
    reason = fmt::format("{} in {}", rt.failed(flavor.set_device, status), rt.library);
    return nullptr;
  }
  std::string device_name = fmt::format("{} device 0", flavor.title);
  if (rt.get_device_properties != nullptr) {
    // Only the leading char name[256] is read (see gpu_runtime_api.h); the
    // buffer is zeroed so an unfilled one reads as an empty name.
    std::vector<char> properties(GPUFEED_GPU_DEVICE_PROP_BUFFER_SIZE, '\0');
    if (rt.get_device_properties(properties.data(), 0) == GPUFEED_GPU_SUCCESS && properties[0] != '\0') {
      device_name.assign(properties.data(), strnlen(properties.data(), GPUFEED_GPU_DEVICE_NAME_SIZE));
    }
  }
  gpufeed_gpu_stream stream = nullptr;
  if (const auto status = rt.stream_create_with_flags(&stream, GPUFEED_GPU_STREAM_NON_BLOCKING);
      status != GPUFEED_GPU_SUCCESS) {
    reason = fmt::format("{} in {}", rt.failed(flavor.stream_create_with_flags, status), rt.library);
    return nullptr;
  }
  return std::make_unique<StreamBackend>(std::move(rt), stream, std::move(device_name));
}

}  // namespace gpufeed::loader::device
