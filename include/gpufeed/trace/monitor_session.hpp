#pragma once
// Runs `gpufeed monitor`: attaches to (or launches) a job, follows it and
// every generation of its DataLoader workers with the eBPF tracer, samples
// /proc each interval, and keeps diagnose's evidence on a sliding window.
// Each interval it publishes the metrics (Prometheus text on /metrics, a
// JSON Lines record); each second it evaluates diagnose's findings on the
// window and logs when one starts or stops. It runs until SIGINT/SIGTERM,
// --duration, or the job's end (in follow mode, not on the job's end); the job is never signalled from here, and
// the tracer detaches on every way out.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "gpufeed/diagnose/findings.hpp"
#include "gpufeed/http/metrics_server.hpp"
#include "gpufeed/probe/host_inspector.hpp"

namespace gpufeed {

struct MonitorRequest {
  std::vector<int> pids;             // --pid, one per rank
  std::vector<std::string> command;  // -- CMD ARGS...
  // Follow mode: every process with this command name (/proc/PID/comm)
  // and/or in this cgroup directory (relative: under /sys/fs/cgroup), found
  // again each second, so a job that restarts is followed again; runs until
  // stopped or --duration.
  std::string comm;
  std::string cgroup;
  double interval_s = 1;
  double window_s = 30;
  double duration_s = 0;             // 0: until stopped or the job ends
  double slow_call_ms = 1.0;
  std::optional<ListenAddress> listen = ListenAddress{};  // nullopt: no HTTP endpoint
  std::string jsonl_path;            // "-": stdout; empty: none
  std::string job;                   // the job label; empty: the first rank's command name
  std::string gpu = "auto";          // --gpu auto|nvml|rocm-smi|none
  int batch_size = 0;                // samples per batch, for samples per joule (0: not known)
  RuleThresholds thresholds;
};

struct MonitorIo {
  HostPaths host;
  std::ostream& out;   // JSON Lines when jsonl_path is "-"
  std::ostream& err;   // notes and finding changes
  bool quiet = false;  // errors only
};

struct MonitorOutcome {
  std::string end_reason;             // "interrupted", "duration", "target exited"
  int intervals = 0;                  // metrics published
  int launched_pid = 0;               // -- CMD still running: to wait for
  std::optional<int> command_status;  // -- CMD: its exit code when it ended
};

MonitorOutcome run_monitor_session(const MonitorRequest& req, MonitorIo& io);

}  // namespace gpufeed
