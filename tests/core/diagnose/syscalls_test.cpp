// Syscall names and classes, and the numbers shared with the BPF program.
#include <gtest/gtest.h>

#include "syscall_nrs.h"
#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/diagnose/histogram.hpp"
#include "gpufeed/diagnose/mounts.hpp"
#include "gpufeed/diagnose/proc_stats.hpp"
#include "gpufeed/diagnose/syscalls.hpp"

namespace gpufeed {
namespace {

TEST(Syscalls, NamesAndClasses) {
  EXPECT_EQ(sys::name(257), "openat");
  EXPECT_EQ(sys::name(262), "newfstatat");
  EXPECT_EQ(sys::name(99999), "syscall_99999");
  EXPECT_TRUE(sys::is_stat(262));
  EXPECT_TRUE(sys::is_open(257));
  EXPECT_TRUE(sys::is_wait(202));
  EXPECT_FALSE(sys::is_wait(0));
  EXPECT_TRUE(sys::is_pipe_read(0));
}

// bpf/syscall_nrs.h is what both the BPF programs and the core compare
// against; the host's UAPI header (the name table) is the truth it must match.
TEST(Syscalls, TheSharedNumbersAreTheHostKernelsOwn) {
  const std::pair<int, const char*> shared[] = {
      {GF_NR_read, "read"}, {GF_NR_close, "close"}, {GF_NR_fstat, "fstat"}, {GF_NR_pread64, "pread64"},
      {GF_NR_readv, "readv"}, {GF_NR_recvfrom, "recvfrom"}, {GF_NR_recvmsg, "recvmsg"}, {GF_NR_futex, "futex"},
      {GF_NR_getdents64, "getdents64"}, {GF_NR_openat, "openat"}, {GF_NR_newfstatat, "newfstatat"},
      {GF_NR_faccessat, "faccessat"}, {GF_NR_pselect6, "pselect6"}, {GF_NR_ppoll, "ppoll"},
      {GF_NR_epoll_pwait, "epoll_pwait"}, {GF_NR_preadv, "preadv"}, {GF_NR_preadv2, "preadv2"},
      {GF_NR_statx, "statx"}, {GF_NR_openat2, "openat2"}, {GF_NR_faccessat2, "faccessat2"},
      {GF_NR_epoll_pwait2, "epoll_pwait2"}, {GF_NR_futex_waitv, "futex_waitv"}, {GF_NR_open, "open"},
      {GF_NR_stat, "stat"}, {GF_NR_lstat, "lstat"}, {GF_NR_access, "access"}, {GF_NR_poll, "poll"},
      {GF_NR_select, "select"}, {GF_NR_epoll_wait, "epoll_wait"}};
  for (const auto& [nr, want] : shared) {
    if (nr >= GF_NR_ABSENT(0)) {
      // Absent on this architecture: no real call carries the number.
      EXPECT_EQ(sys::name(nr), "syscall_" + std::to_string(nr)) << want;
      continue;
    }
    EXPECT_EQ(sys::name(nr), want) << "bpf/syscall_nrs.h gives " << want << " number " << nr;
  }
  EXPECT_TRUE(sys::is_open(GF_NR_openat));
  EXPECT_TRUE(sys::is_stat(GF_NR_statx));
  EXPECT_TRUE(sys::is_read(GF_NR_pread64));
  EXPECT_FALSE(sys::is_read(GF_NR_close));
}

}  // namespace
}  // namespace gpufeed
