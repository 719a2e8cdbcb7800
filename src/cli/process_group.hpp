#pragma once
// Children gpufeed starts and stops (a tune --exec job, the PyTorch probe)
// lead a process group of their own, so that ending one ends what it
// started (a DataLoader's workers) with it.
#include <sys/types.h>

#include <chrono>

namespace gpufeed::cli {

// Ends the group that `leader` leads: SIGTERM (and SIGCONT, so that a paused
// group takes it) to the group, SIGKILL to what is left after `grace`.
// Always reaps the leader into `status`. True when the leader had already
// ended by itself, before any signal.
bool end_process_group(pid_t leader, int& status, std::chrono::milliseconds grace);

}  // namespace gpufeed::cli
