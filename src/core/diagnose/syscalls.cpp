#include "gpufeed/diagnose/syscalls.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

#include "syscall_nrs.h"

namespace gpufeed::sys {
namespace {

struct Entry {
  int nr;
  const char* name;
};

constexpr Entry kTable[] = {
#include "syscall_table.inc"
};

}  // namespace

std::string name(int nr) {
  for (const auto& e : kTable) {
    if (e.nr == nr) return e.name;
  }
  return fmt::format("syscall_{}", nr);
}

bool is_stat(int nr) {
  switch (nr) {
    case GF_NR_stat: case GF_NR_lstat: case GF_NR_access: case GF_NR_newfstatat:
    case GF_NR_faccessat: case GF_NR_statx: case GF_NR_faccessat2:
      return true;
  }
  return false;
}

bool is_open(int nr) { return nr == GF_NR_open || nr == GF_NR_openat || nr == GF_NR_openat2; }

bool is_read(int nr) {
  switch (nr) {
    case GF_NR_read: case GF_NR_pread64: case GF_NR_readv: case GF_NR_preadv: case GF_NR_preadv2:
      return true;
  }
  return false;
}

bool is_wait(int nr) {
  switch (nr) {
    case GF_NR_poll: case GF_NR_select: case GF_NR_futex: case GF_NR_epoll_wait: case GF_NR_pselect6:
    case GF_NR_ppoll: case GF_NR_epoll_pwait: case GF_NR_epoll_pwait2: case GF_NR_futex_waitv:
      return true;
  }
  return false;
}

bool is_pipe_read(int nr) {
  return nr == GF_NR_read || nr == GF_NR_readv || nr == GF_NR_recvfrom || nr == GF_NR_recvmsg;
}

}  // namespace gpufeed::sys
