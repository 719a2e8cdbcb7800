#pragma once
// Runs one `gpufeed diagnose` window: attaches to (or launches) the job,
// traces it and its workers, samples /proc, and returns the diagnosis. The
// traced job is never signalled or stopped by gpufeed; tracing ends cleanly
// on the deadline, on SIGINT/SIGTERM, or when the job exits.
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "gpufeed/diagnose/report.hpp"
#include "gpufeed/probe/host_inspector.hpp"

namespace gpufeed {

enum class EbpfMode { Auto, Required, Off };

struct DiagnoseRequest {
  std::vector<int> pids;             // --pid, one per rank
  std::vector<std::string> command;  // -- CMD ARGS...
  double duration_s = 30;
  double slow_call_ms = 1.0;
  double sample_hz = 10;
  EbpfMode ebpf = EbpfMode::Auto;
  std::string gpu = "auto";          // --gpu auto|nvml|rocm-smi|none
  double gpu_hz = 10;
  std::string gpu_trace;             // --gpu-trace FILE: GPU activity from a recording
  std::optional<double> samples_per_s;  // --samples-per-s: the job's throughput, for samples per joule
  RuleThresholds thresholds;
};

struct DiagnoseOutcome {
  DiagnosisReport report;
  bool interrupted = false;           // SIGINT/SIGTERM ended the window
  int launched_pid = 0;               // for -- CMD: still to be waited for
  std::optional<int> command_status;  // exit code (128+signal) if it ended in the window
};

struct SessionIo {
  HostPaths host;
  std::ostream& err;                  // notes and progress
  bool progress = false;              // a live progress line (stderr is a TTY)
  bool quiet = false;                 // no notes, errors only
};

DiagnoseOutcome run_diagnose_session(const DiagnoseRequest& req, SessionIo& io);

// After the report is out: waits for a launched command and returns its exit
// code (128 + signal when killed). Forwards a SIGTERM gpufeed received.
int wait_for_command(int pid, std::ostream& err, bool quiet = false);

}  // namespace gpufeed
