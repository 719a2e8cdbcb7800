#pragma once
// Adapter for `tune --exec --metric data-wait`: traces one trial's job
// with the eBPF tracer that diagnose uses. The job is launched through a
// shell, so its loop is not the process tune started: the trace attaches
// once the job's tree shows a loop (a process whose children are all
// leaves, forks of it: its DataLoader workers). Its window opens a settling
// second later (the workers' first batches, their imports), and keeps the
// loop's waits for data and the call histograms from then on. Only the
// loops are traced, not their workers. The job is
// never signalled from here; the tracer detaches when this object goes.
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
  // How long the window has been open (0 while the job settles).
  double window_seconds() const;
  // The window, as diagnose's evidence (from attaching, when the job ended
  // before it settled); the tracer detaches.
  Evidence finish();

 private:
  int job_;
  int ranks_;
  std::uint64_t settle_ns_;
  std::unique_ptr<BpfTracer> tracer_;
  std::uint64_t attached_ns_ = 0;
  std::uint64_t window_ns_ = 0;  // when the window opened
  std::vector<SyscallStat> before_;  // the histograms then
  std::uint64_t last_look_ns_ = 0;
  std::vector<WaitSpan> waits_;
  int loops_ = 0;
};

}  // namespace gpufeed
