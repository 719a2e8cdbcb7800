#pragma once
// Runs a helper program to its end and keeps what it printed: its own
// process group, so a timeout or Ctrl-C stops it and whatever it started
// (a PyTorch DataLoader's workers) together.
#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace gpufeed::cli {

struct ChildResult {
  int exit_code = -1;   // -1: killed by a signal, or it could not start
  bool started = true;  // false: execvp failed (no such program)
  bool timed_out = false;
  bool stopped = false;  // `stop` was raised
  std::string out;
  std::string err;
};

// Called about every 100 ms while the child runs, with its process group
// and what it has printed so far (tune --pytorch-probe pauses the group to
// time the built-in decode in between). It must leave the group running.
using ChildTick = std::function<void(int group, const ChildResult& so_far)>;

// argv[0] is looked up in PATH. Waits at most `timeout_s`, then SIGTERM to
// the group and SIGKILL after 2 s; always reaps the child.
ChildResult run_child(const std::vector<std::string>& argv, double timeout_s, const std::atomic<bool>* stop = nullptr,
                      const ChildTick& on_tick = {});

}  // namespace gpufeed::cli
