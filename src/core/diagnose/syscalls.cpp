#include "gpufeed/diagnose/syscalls.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

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
  // stat, lstat, access, newfstatat, faccessat, statx, faccessat2
  return nr == 4 || nr == 6 || nr == 21 || nr == 262 || nr == 269 || nr == 332 || nr == 439;
}
bool is_open(int nr) { return nr == 2 || nr == 257 || nr == 437; }
bool is_read(int nr) { return nr == 0 || nr == 17 || nr == 19 || nr == 295 || nr == 327; }
bool is_wait(int nr) {
  // poll, select, futex, epoll_wait, pselect6, ppoll, epoll_pwait, epoll_pwait2, futex_waitv
  return nr == 7 || nr == 23 || nr == 202 || nr == 232 || nr == 270 || nr == 271 || nr == 281 || nr == 441 ||
         nr == 449;
}
bool is_pipe_read(int nr) { return nr == 0 || nr == 19 || nr == 45 || nr == 47; }

}  // namespace gpufeed::sys
