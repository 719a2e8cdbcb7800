// The host backend's page-locked buffers: byte accounting, real locking
// (VmLck in /proc/self/status) where the process may lock, the fallback to
// ordinary memory when RLIMIT_MEMLOCK forbids it (in a forked child with the
// limit lowered and CAP_IPC_LOCK dropped), and MADV_DONTFORK (a forked child
// does not get the buffer).
#include <gtest/gtest.h>

#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include "gpufeed/device/device_host.hpp"

namespace gpufeed::loader {
namespace {

// VmLck from /proc/self/status, in bytes.
std::optional<std::uint64_t> locked_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (status >> key) {
    if (key == "VmLck:" && status >> kib >> unit) return kib * 1024;
    std::getline(status, unit);
  }
  return std::nullopt;
}

bool has_cap_ipc_lock() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[CAP_IPC_LOCK / 32].effective & (1u << (CAP_IPC_LOCK % 32))) != 0;
}

// Takes CAP_IPC_LOCK out of this process's effective and permitted sets, so
// RLIMIT_MEMLOCK applies even to root.
bool drop_cap_ipc_lock() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  const auto bit = 1u << (CAP_IPC_LOCK % 32);
  data[CAP_IPC_LOCK / 32].effective &= ~bit;
  data[CAP_IPC_LOCK / 32].permitted &= ~bit;
  return syscall(SYS_capset, &header, data) == 0;
}

TEST(PinnedMemory, AccountsAllocatedBytes) {
  auto backend = make_host_backend();
  EXPECT_EQ(backend->pinned_bytes(), 0u);
  PinnedBuffer a = backend->allocate_pinned(1000);  // less than a page
  PinnedBuffer b = backend->allocate_pinned(3 << 20);
  EXPECT_EQ(a.bytes, 1000u);
  EXPECT_EQ(b.bytes, 3u << 20);
  EXPECT_EQ(backend->pinned_bytes(), 1000u + (3u << 20));
  std::memset(a.data, 0xab, a.bytes);  // usable to the last byte
  std::memset(b.data, 0xcd, b.bytes);

  PinnedBuffer empty = backend->allocate_pinned(0);
  EXPECT_EQ(empty.data, nullptr);
  EXPECT_EQ(backend->pinned_bytes(), 1000u + (3u << 20));
  backend->free_pinned(empty);

  backend->free_pinned(a);
  EXPECT_EQ(backend->pinned_bytes(), 3u << 20);
  // A buffer this backend did not hand out is ignored, not unmapped.
  std::byte foreign[16];
  backend->free_pinned({foreign, sizeof foreign, true});
  EXPECT_EQ(backend->pinned_bytes(), 3u << 20);
  backend->free_pinned(b);
  EXPECT_EQ(backend->pinned_bytes(), 0u);
}

TEST(PinnedMemory, LocksPagesWhenTheProcessMay) {
  constexpr std::size_t kBytes = 4 << 20;
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_MEMLOCK, &limit), 0);
  const auto before = locked_bytes();
  if (!before) GTEST_SKIP() << "no VmLck in /proc/self/status";
  if (!has_cap_ipc_lock() && limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < *before + kBytes) {
    GTEST_SKIP() << "this process may lock only " << limit.rlim_cur << " bytes (RLIMIT_MEMLOCK, no CAP_IPC_LOCK)";
  }
  auto backend = make_host_backend();
  PinnedBuffer b = backend->allocate_pinned(kBytes);
  EXPECT_TRUE(b.page_locked);
  EXPECT_GE(locked_bytes().value_or(0), *before + kBytes);
  EXPECT_EQ(backend->description().find("NOT page-locked"), std::string::npos) << backend->description();
  backend->free_pinned(b);
  EXPECT_EQ(locked_bytes().value_or(0), *before);
}

// In a child: RLIMIT_MEMLOCK of 64 KiB and no CAP_IPC_LOCK, then a 4 MiB
// buffer. It must come back usable, marked not page-locked, with the reason
// in description(). The child reports through its exit code and a pipe.
TEST(PinnedMemory, FallsBackToOrdinaryMemoryWhenTheLockLimitForbids) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_fds[0]);
    const rlimit tiny{64 << 10, 64 << 10};
    if (setrlimit(RLIMIT_MEMLOCK, &tiny) != 0) _exit(10);
    if (has_cap_ipc_lock() && !drop_cap_ipc_lock()) _exit(11);
    int code = 0;
    {
      auto backend = make_host_backend();
      PinnedBuffer b = backend->allocate_pinned(4 << 20);
      std::memset(b.data, 0x5a, b.bytes);
      if (b.page_locked) code = 12;
      if (backend->pinned_bytes() != (4u << 20)) code = 13;
      const std::string description = backend->description();
      if (write(pipe_fds[1], description.data(), description.size()) < 0) code = 14;
      backend->free_pinned(b);
    }
    _exit(code);
  }
  close(pipe_fds[1]);
  std::string description;
  char chunk[512];
  for (ssize_t n; (n = read(pipe_fds[0], chunk, sizeof chunk)) > 0;) description.append(chunk, static_cast<std::size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "child died with signal " << WTERMSIG(status);
  ASSERT_NE(WEXITSTATUS(status), 10) << "could not lower RLIMIT_MEMLOCK";
  ASSERT_NE(WEXITSTATUS(status), 11) << "could not drop CAP_IPC_LOCK";
  EXPECT_NE(WEXITSTATUS(status), 12) << "buffer claimed page-locked beyond RLIMIT_MEMLOCK";
  EXPECT_EQ(WEXITSTATUS(status), 0) << description;
  EXPECT_NE(description.find("NOT page-locked"), std::string::npos) << description;
  EXPECT_NE(description.find("RLIMIT_MEMLOCK is 64 KiB"), std::string::npos) << description;
  std::printf("fallback reported as: %s\n", description.c_str());
}

// MADV_DONTFORK: the mapping is absent in a forked child, so touching it
// there faults (the child catches SIGSEGV and exits 42 to say so).
TEST(PinnedMemory, BufferIsNotInheritedByAForkedChild) {
  auto backend = make_host_backend();
  PinnedBuffer b = backend->allocate_pinned(1 << 20);
  std::memset(b.data, 1, b.bytes);
  volatile std::byte* data = b.data;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    struct sigaction on_fault{};
    on_fault.sa_handler = [](int) { _exit(42); };
    sigaction(SIGSEGV, &on_fault, nullptr);
    sigaction(SIGBUS, &on_fault, nullptr);
    const std::byte value = data[0];
    _exit(value == std::byte{1} ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 42) << "the child could read the pinned buffer: MADV_DONTFORK missing";
  backend->free_pinned(b);
}

}  // namespace
}  // namespace gpufeed::loader
