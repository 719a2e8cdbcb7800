#pragma once
// Adapter for `tune --exec --metric data-wait`: traces one trial's job
// with the eBPF tracer that diagnose uses. The job is launched through a
// shell, so its loop is not the process tune started: the trace attaches
// once the job's tree shows the same loops on two looks 0.1 s apart (a
// process whose children are all leaves and forks of it: its DataLoader
// workers; under forkserver, the fork server's parent). Only the loops are
// traced, not their workers. The window opens a settling second later (the
// workers' first batches) and keeps the loops' waits for data and the call
// histograms from then on. The job is never signalled from here; the
// tracer detaches when this object goes.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/diagnose/evidence.hpp"

namespace gpufeed {

class BpfTracer;

class JobWaitTrace {
 public:
  // Why eBPF tracing cannot run here (not root, no BTF), if so.
  static std::optional<std::string> unavailable_reason();

  // Loads the tracer (throws gpufeed::Error); `ranks`: loops to wait for.
  JobWaitTrace(int job_pid, int ranks, double settle_s = 1.0);
  ~JobWaitTrace();
  JobWaitTrace(const JobWaitTrace&) = delete;
  JobWaitTrace& operator=(const JobWaitTrace&) = delete;

  // Call often (every 100 ms or so): looks for the loops until they are
  // found, and takes the tracer's events. True once attached.
  bool tick();
  bool attached() const { return attached_ns_ != 0; }
  // The window opened: the job has settled and its figures count from here.
  bool window_open() const { return window_ns_ != 0; }
  // How long the window has been open (0 while the job settles).
  double window_seconds() const;
  // The window, as diagnose's evidence (from attaching, when the job ended
  // before it settled); the tracer detaches.
  Evidence finish();

 private:
  // The job's loops now (sorted pids): see the class comment.
  std::vector<int> find_loops() const;

  int job_;
  int ranks_;
  std::uint64_t settle_ns_;
  std::unique_ptr<BpfTracer> tracer_;
  std::uint64_t attached_ns_ = 0;
  std::uint64_t window_ns_ = 0;  // when the window opened
  std::vector<SyscallStat> before_;  // the histograms then
  std::uint64_t last_look_ns_ = 0;
  std::vector<WaitSpan> waits_;
  std::vector<int> last_loops_;  // the previous look's
  int loops_ = 0;
};

}  // namespace gpufeed
