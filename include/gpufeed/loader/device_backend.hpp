#pragma once
// Where batches go after collation: page-locked host buffers and a dedicated
// transfer stream to the device. One interface, four backends (src/device):
// CUDA and HIP (runtimes loaded with dlopen); host, which plays the GPU on
// machines without one: its own page-locked allocator and a copy thread that
// acts as the DMA engine; and cpu, training on the CPU: no transfer at all,
// the step reads the collated batch where the workers wrote it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace gpufeed::loader {

struct PinnedBuffer {
  std::byte* data = nullptr;
  std::size_t bytes = 0;
  bool page_locked = false;  // false when the OS refused to lock it (reported)
};

// What the copies cost, for the report.
struct TransferStats {
  std::uint64_t copies = 0;
  std::uint64_t bytes = 0;
  std::uint64_t busy_ns = 0;  // time the transfer engine spent copying
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual std::string name() const = 0;         // "host", "cuda", "hip"
  virtual std::string description() const = 0;  // "NVIDIA H200, CUDA runtime 13.0"

  // Page-locked host memory. Throws gpufeed::Error when none can be had.
  virtual PinnedBuffer allocate_pinned(std::size_t bytes) = 0;
  virtual void free_pinned(PinnedBuffer buffer) noexcept = 0;
  // Bytes currently allocated through allocate_pinned.
  virtual std::uint64_t pinned_bytes() const = 0;

  // Device-side batch slots the copies land in; called once before copies.
  virtual void reserve_device_slots(int count, std::size_t bytes_each) = 0;
  // Device address of a slot (host memory for the host backend), for a step
  // that consumes the batch.
  virtual void* device_slot(int slot) = 0;

  // Queues an asynchronous copy of `bytes` from `src` into device slot `slot`
  // on the transfer stream and returns a ticket; returns immediately.
  virtual std::uint64_t copy_async(const PinnedBuffer& src, std::size_t bytes, int slot) = 0;
  // Blocks until the copy behind `ticket` is done: only that copy, so a step
  // never waits for a later batch's transfer.
  virtual void wait(std::uint64_t ticket) = 0;

  virtual TransferStats transfer_stats() const = 0;

  // False for the cpu backend: nothing is copied, the step reads the host
  // batch in place, so the pipeline keeps a batch's buffer until its step
  // ends and collates into ordinary memory (pin_memory has no use).
  virtual bool transfers() const { return true; }
};

enum class DeviceChoice { Auto, Hip, Cuda, Host, Cpu };

}  // namespace gpufeed::loader
