#pragma once
// The host backend's page-locked allocator: anonymous mmap + mlock, with
// MADV_DONTFORK so a forked child (a DataLoader-style worker, a subprocess)
// does not inherit the mapping and its locked pages. When mlock is refused
// (RLIMIT_MEMLOCK without CAP_IPC_LOCK), the buffer is still handed out, as
// ordinary memory, and the reason is kept for the report. Private to
// src/device.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "gpufeed/loader/device_backend.hpp"

namespace gpufeed::loader::device {

class PageLockedAllocator {
 public:
  PageLockedAllocator() = default;
  ~PageLockedAllocator();  // unmaps whatever was not freed
  PageLockedAllocator(const PageLockedAllocator&) = delete;
  PageLockedAllocator& operator=(const PageLockedAllocator&) = delete;

  // Throws gpufeed::Error when mmap fails. Zero bytes gives an empty buffer.
  PinnedBuffer allocate(std::size_t bytes);
  // Ignores buffers it did not hand out (and empty ones).
  void free(PinnedBuffer buffer) noexcept;

  std::uint64_t allocated_bytes() const;
  // Why the last refused mlock was refused; empty while every lock succeeded.
  std::string lock_failure() const;

 private:
  struct Mapping {
    std::size_t requested = 0;
    std::size_t mapped = 0;
    bool locked = false;
  };
  mutable std::mutex mutex_;
  std::unordered_map<std::byte*, Mapping> mappings_;
  std::uint64_t allocated_bytes_ = 0;
  std::string lock_failure_;
};

}  // namespace gpufeed::loader::device
