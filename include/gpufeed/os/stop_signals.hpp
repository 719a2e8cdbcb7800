#pragma once
// gpufeed's one signal policy (docs/exit-codes.md). Outside any
// StopOnSignal, SIGINT and SIGTERM end the process at once, as they do any
// program: nothing is held that needs cleaning up. While one is alive (a run
// with figures to report, a trace attached, a job launched), they set flag()
// instead, and every long phase of that run checks it and ends within a
// second. Scopes nest: an inner one shares the outer's flag, so a signal that
// came before it is not lost. The previous handlers come back when the
// outermost ends. The handlers are installed without SA_RESTART, so a
// blocking call (poll, waitpid) returns EINTR at once and its loop sees the
// flag.
#include <atomic>

namespace gpufeed::os {

class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  const std::atomic<bool>& flag() const;
  // The latest signal that arrived in this scope (SIGINT or SIGTERM), 0 when
  // none: diagnose passes a SIGTERM on to the command it launched.
  int last_signal() const;
};

// True when a signal asked the current StopOnSignal scope to stop; false
// outside any (for code that is handed no flag, such as a listing).
bool stop_requested();

}  // namespace gpufeed::os
