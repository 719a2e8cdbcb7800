#pragma once
// Commands gpufeed starts: a tune --exec job, the PyTorch probe, the command
// diagnose traces. Those gpufeed stops itself lead a process group of their
// own, so that ending one ends what it started (a DataLoader's workers) with
// it. Every fork() and exec in gpufeed goes through here.
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "gpufeed/wait_status.hpp"

namespace gpufeed::os {

struct LaunchOptions {
  bool own_group = true;  // false: stays in gpufeed's group (a terminal's Ctrl-C reaches both)
  bool held = false;      // waits, before exec, until release(): diagnose puts it in the traced set first
  int stdout_fd = -1;     // -1: gpufeed's own
  int stderr_fd = -1;
};

// A started command. argv[0] is looked up in PATH.
class Launched {
 public:
  // Throws gpufeed::Error (runtime) when no pipe or process can be made.
  Launched(const std::vector<std::string>& argv, const LaunchOptions& options);
  ~Launched();
  Launched(const Launched&) = delete;
  Launched& operator=(const Launched&) = delete;

  pid_t pid() const { return pid_; }
  // Lets a held command exec (a no-op for one that was not held) and waits
  // until it has: 0, or the errno of an exec that failed (the child has then
  // exited with 127; the caller reaps it). Call once.
  int release();

 private:
  pid_t pid_ = -1;
  int go_ = -1;    // held: the child reads one byte from it before exec
  int fail_ = -1;  // close-on-exec: the child writes its errno when exec fails
};

// Ends the group that `leader` leads: SIGTERM (and SIGCONT, so that a paused
// group takes it) to the group, SIGKILL to what is left after `grace`.
// Always reaps the leader into `status`. True when the leader had already
// ended by itself, before any signal.
bool end_process_group(pid_t leader, int& status, std::chrono::milliseconds grace);

using gpufeed::exit_code_of;  // gpufeed/wait_status.hpp

}  // namespace gpufeed::os
