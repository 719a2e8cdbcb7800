#pragma once
// The CPU a user's job spends, read from its process group (docs/tune.md):
// `tune --exec` snapshots the group while a trial runs, and the CPU each
// role spent between two snapshots gives the job's own CPU per sample (its
// DataLoader workers: Python, PIL, IPC) and its loop's CPU per batch, which
// phase 2's built-in measurement cannot see. Pure: the snapshots come from
// /proc in the CLI, and from scripts in the tests.
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpufeed/tune/cpu_from_trials.hpp"
#include "gpufeed/tune/search.hpp"

namespace gpufeed::tune {

struct JobProcess {
  int pid = 0;
  int ppid = 0;
  double cpu_s = 0;  // user + system since it started
};

struct JobCpu {
  int loops = 0;            // processes whose children are all leaves: one per rank
  int workers = 0;          // their children
  double loop_cpu_s = 0;    // all loops, between the snapshots
  double worker_cpu_s = 0;  // all workers, between the snapshots
};

// A job's loops (one per rank) and each loop's workers, from one snapshot:
// workers are the leaves (no child among the job's processes), loops are
// their parents, when such a parent has only leaves for children (a
// launcher such as `sh -c` or torchrun is neither).
struct JobLoop {
  int pid = 0;
  std::vector<int> workers;
};
std::vector<JobLoop> job_loops(const std::vector<JobProcess>& procs);

// The roles, from the later snapshot (job_loops). A process missing from
// `before` was born in between: all its CPU counts; one missing from
// `after` has ended, and what it spent since `before` is lost. Under the `forkserver` start method the fork server is
// the workers' parent and reads as the loop.
JobCpu job_cpu_between(const std::vector<JobProcess>& before, const std::vector<JobProcess>& after);

// The looks at a running job's processes that one trial keeps. Every look
// is kept until the job's first figure, which fixes the first look. After
// it a look is kept only while the job has the first look's loops, each
// with as many workers, and some worker of the last kept look still runs:
// a job that ends by itself stops its workers first (a look then has the
// loops without them, or with a helper child in their place, and the
// stopped workers' CPU is lost), and a job whose workers all change at once
// (a new epoch's) keeps the looks up to the change, since the CPU of the
// workers that ended is in no later look.
class JobCpuTrack {
 public:
  void look(std::vector<JobProcess> procs, double t_s);  // t_s: seconds on the trial's clock
  void first_figure();                                   // the latest look opens the window
  double first_t_s() const { return first_t_s_; }
  double window_s() const { return last_t_s_ - first_t_s_; }
  // The CPU by role over the window, when it spans a second or more and the
  // first look saw the job (an empty one would count every process as born
  // in the window, start-up and all).
  std::optional<JobCpu> cpu() const;

 private:
  bool started_ = false;
  std::vector<JobProcess> first_, last_;
  double first_t_s_ = 0, last_t_s_ = 0;
  std::vector<std::pair<int, std::size_t>> first_loops_;  // loop pid, its workers
  std::set<int> last_workers_;
};

// The figures a trial keeps: the workers' CPU per sample (into
// Trial::transform_ms and transform_samples) and the loop's per batch
// (Trial::loop_cpu_ms, 0 under 0.01 ms: a fork server's, not a loop's),
// for `samples_per_s` per rank over `seconds`. Unchanged when the window
// says nothing, or when the roles found are not one loop per rank (a
// helper process with children of its own would skew every figure).
void record_job_cpu(Trial& trial, const JobCpu& cpu, double samples_per_s, double seconds, int batch_size, int ranks);

// Both below read the full trials that measured the job's CPU, when there
// are any (longer windows), else the short ones.
//
// The job's workers' CPU per sample from its trials: cpu_from_trials' line
// where trials kept their workers within the cores; else the mean over all
// trials that measured it, weighted by samples, with no growth (a job's
// figure is CPU time, which a worker waiting for a core does not spend).
CpuFromTrials job_cpu_from_trials(const std::vector<Trial>& trials, const NodeShape& node);

// The workload with the job's CPU per sample: phase 2's distribution
// scaled to it where the two are within 3x (the same kind of work: a JPEG
// decode in C++ and in PIL), else a constant. Phase 2's shape of a 5 us
// transform (raw bytes) holds a page fault or two, which scaled to a
// Python worker's 0.7 ms per sample would be CPU stalls of tens of ms that
// no job has.
Workload with_job_cpu(const Workload& w, const CpuFromTrials& f);

// The loop's CPU per batch, the median over the trials that measured it
// (0: none did).
double loop_cpu_from_trials(const std::vector<Trial>& trials);

}  // namespace gpufeed::tune
