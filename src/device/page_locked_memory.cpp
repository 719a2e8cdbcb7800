#include "page_locked_memory.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "gpufeed/error.hpp"

namespace gpufeed::loader::device {
namespace {

std::size_t round_to_pages(std::size_t bytes) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

// mlock(2)/munlock(2) as system calls. The sanitizer runtimes intercept the
// libc wrappers and turn them into no-ops that report success, which would
// make a sanitizer build claim page-locked buffers it never locked.
bool lock_pages(void* data, std::size_t bytes) { return syscall(SYS_mlock, data, bytes) == 0; }
void unlock_pages(void* data, std::size_t bytes) { syscall(SYS_munlock, data, bytes); }

std::string memlock_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_MEMLOCK, &limit) != 0) return "unknown";
  if (limit.rlim_cur == RLIM_INFINITY) return "unlimited";
  return fmt::format("{} KiB", limit.rlim_cur / 1024);
}

}  // namespace

PageLockedAllocator::~PageLockedAllocator() {
  for (const auto& [data, mapping] : mappings_) {
    if (mapping.locked) unlock_pages(data, mapping.mapped);
    munmap(data, mapping.mapped);
  }
}

PinnedBuffer PageLockedAllocator::allocate(std::size_t bytes) {
  if (bytes == 0) return {nullptr, 0, true};
  const std::size_t mapped = round_to_pages(bytes);
  void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    throw runtime_error(fmt::format("cannot map {} bytes for a host batch buffer: {}", bytes, std::strerror(errno)),
                        "lower the batch size or prefetch depth, or free memory");
  }
  // Best effort: without it a fork() shares the pages copy-on-write, and the
  // child's first write to them copies locked memory.
  madvise(raw, mapped, MADV_DONTFORK);
  const bool locked = lock_pages(raw, mapped);
  const int lock_errno = errno;

  std::lock_guard lock(mutex_);
  if (!locked) {
    lock_failure_ = fmt::format("mlock of {} bytes failed ({}; RLIMIT_MEMLOCK is {})", mapped,
                                std::strerror(lock_errno), memlock_limit());
  }
  auto* data = static_cast<std::byte*>(raw);
  mappings_[data] = {bytes, mapped, locked};
  allocated_bytes_ += bytes;
  return {data, bytes, locked};
}

void PageLockedAllocator::free(PinnedBuffer buffer) noexcept {
  if (buffer.data == nullptr) return;
  Mapping mapping;
  {
    std::lock_guard lock(mutex_);
    auto it = mappings_.find(buffer.data);
    if (it == mappings_.end()) return;
    mapping = it->second;
    mappings_.erase(it);
    allocated_bytes_ -= mapping.requested;
  }
  if (mapping.locked) unlock_pages(buffer.data, mapping.mapped);
  munmap(buffer.data, mapping.mapped);
}

std::uint64_t PageLockedAllocator::allocated_bytes() const {
  std::lock_guard lock(mutex_);
  return allocated_bytes_;
}

std::string PageLockedAllocator::lock_failure() const {
  std::lock_guard lock(mutex_);
  return lock_failure_;
}

}  // namespace gpufeed::loader::device
