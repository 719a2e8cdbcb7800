#pragma once
// The --exec job's process as one trial holds it: a guard that stops its
// group on every way out, and a look at its processes' CPU.
#include <sys/types.h>

#include <vector>

#include "gpufeed/tune/job_cpu.hpp"

namespace gpufeed::cli {

// The job and every process it started, with the CPU each has spent, from
// /proc. Descendants rather than the job's process group: a launcher such
// as torchrun starts each rank in a session of its own. A process that ends
// while it is read is left out.
std::vector<tune::JobProcess> snapshot_job(pid_t job);

// Stops the job's group (and closes its output) unless the trial got to do
// so: whatever throws mid-trial must not leave the job running in a group
// of its own, out of Ctrl-C's reach.
struct JobGuard {
  pid_t pid;
  int fd;
  JobGuard(pid_t job, int output) : pid(job), fd(output) {}
  JobGuard(const JobGuard&) = delete;
  JobGuard& operator=(const JobGuard&) = delete;
  ~JobGuard();
};

}  // namespace gpufeed::cli
