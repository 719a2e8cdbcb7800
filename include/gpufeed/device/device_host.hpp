#pragma once
// The host backend on its own (src/device/host_backend.cpp): the device
// backend for machines without a GPU. Its "device" slots are ordinary memory
// and one copy thread plays the DMA engine, so the pipeline above it overlaps
// transfers with steps exactly as it would on a GPU.
#include <cstdint>
#include <functional>
#include <memory>

#include "gpufeed/loader/device_backend.hpp"

namespace gpufeed::loader {

struct HostBackendOptions {
  // Called on the copy thread just before it copies the batch behind
  // `ticket`. Tests use it to hold the "DMA engine" with a copy in flight;
  // empty in production.
  std::function<void(std::uint64_t ticket)> before_copy;
};

// Page-locked buffers come from mmap + mlock (MADV_DONTFORK, so a forked
// worker does not inherit them). When mlock is refused (RLIMIT_MEMLOCK), the
// buffer is ordinary memory with page_locked = false, and description() says
// why. copy_async() queues the copy for the copy thread, which runs copies in
// FIFO order; wait() returns once its own copy is done. The destructor lets
// the copy in progress finish and drops the queued ones (it never hangs).
// Misuse (a bad slot, ticket or size) throws std::invalid_argument.
std::unique_ptr<DeviceBackend> make_host_backend(HostBackendOptions options = {});

}  // namespace gpufeed::loader

namespace gpufeed::loader {

// The cpu backend (src/device/cpu_backend.cpp): a job that trains on the CPU,
// as a PyTorch job without a GPU does. transfers() is false: copy_async()
// only numbers the batch, wait() returns at once, and there are no device
// slots (device_slot() is nullptr; the step gets the host batch). Its
// "pinned" buffers are ordinary memory (page_locked = false).
std::unique_ptr<DeviceBackend> make_cpu_backend();

}  // namespace gpufeed::loader
