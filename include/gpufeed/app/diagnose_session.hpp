#pragma once
// `gpufeed diagnose` as an application session: one window that attaches to
// (or launches) the job, traces it and its workers, samples /proc and the
// GPUs, and returns the diagnosis. The session holds the policy; the ports
// below hold the machine (the tracer, the launched command, /proc, the
// GPUs, the clock, the stop signals), so unit tests drive it with fakes
// (tests/app/diagnose_session_test.cpp) and the CLI wires the real
// adapters (trace/diagnose_platform.hpp).
//
// The traced job is never signalled or stopped by gpufeed; tracing ends
// cleanly on the deadline, on SIGINT/SIGTERM, or when the job exits.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "gpufeed/diagnose/proc_source.hpp"
#include "gpufeed/diagnose/report.hpp"
#include "gpufeed/diagnose/trace_events.hpp"
#include "gpufeed/gpu/sampler.hpp"

namespace gpufeed::app {

enum class EbpfMode { Auto, Required, Off };

struct DiagnoseRequest {
  std::vector<int> pids;             // one per rank
  std::vector<std::string> command;  // or a command to launch
  double duration_s = 30;
  double slow_call_ms = 1.0;
  double sample_hz = 10;
  EbpfMode ebpf = EbpfMode::Auto;
  std::string gpu = "auto";          // a sampler backend, "auto" or "none"
  double gpu_hz = 10;
  std::string gpu_trace;             // GPU activity from a recording instead
  std::optional<double> samples_per_s;  // the job's throughput, for samples per joule
  RuleThresholds thresholds;
};

struct DiagnoseOutcome {
  DiagnosisReport report;
  bool interrupted = false;           // SIGINT/SIGTERM ended the window
  int launched_pid = 0;               // a launched command still to be waited for
  std::optional<int> command_status;  // exit code (128+signal) if it ended in the window
};

struct DiagnoseIo {
  std::ostream& err;                  // notes and progress
  bool progress = false;              // a live progress line (stderr is a TTY)
  bool quiet = false;                 // no notes, errors only
};

// Port: the syscall tracer (eBPF). Destroying it detaches it.
class SyscallTracer {
 public:
  virtual ~SyscallTracer() = default;
  // Puts a process in the traced set (its threads and later children follow).
  virtual void add_process(int tgid, bool worker, int rank) = 0;
  // Waits up to timeout_ms for events; returns how many were handled.
  virtual int poll(int timeout_ms, const std::function<void(const TraceEvent&)>& on_event) = 0;
  virtual std::vector<SyscallStat> histograms() const = 0;
  virtual TracerCounters counters() const = 0;
};

// Port: a command started held before its exec, so the tracer can follow it
// from its first instruction.
class LaunchedCommand {
 public:
  virtual ~LaunchedCommand() = default;
  virtual int pid() const = 0;
  // Lets it exec; throws a usage error when exec failed.
  virtual void release() = 0;
  // Its exit code (128 + signal) once it has ended; reaps it.
  virtual std::optional<int> try_wait() = 0;
};

struct GpuSamplerOpen {
  std::unique_ptr<GpuSampler> sampler;  // null when unavailable
  std::string unavailable;              // why, one line
};

struct HostCpus {
  int usable = 0;        // the CPUs this host gives a job (affinity, quota)
  CpuList allowed;       // gpufeed's own affinity, when the job's is unknown
};

// The machine, as the diagnose session sees it.
class DiagnosePlatform {
 public:
  virtual ~DiagnosePlatform() = default;
  virtual const ProcSource& proc() = 0;
  virtual HostCpus host_cpus() = 0;
  // Why eBPF tracing cannot run here (no BTF, missing capability), if so.
  virtual std::optional<std::string> tracing_unavailable() = 0;
  virtual std::unique_ptr<SyscallTracer> open_tracer(const TracerSettings& settings) = 0;  // throws Error
  virtual std::unique_ptr<LaunchedCommand> launch(const std::vector<std::string>& command) = 0;
  // A slow-call event as evidence: its path made absolute, its mount found.
  virtual SlowCall slow_call(const TraceEvent& event, double t_s) = 0;
  virtual GpuSamplerOpen open_gpu_sampler(const std::string& backend) = 0;
  // From here on SIGINT/SIGTERM end the window instead of gpufeed.
  virtual void catch_stop_signals() = 0;
  virtual bool stop_requested() = 0;
  virtual std::uint64_t now_ns() = 0;  // CLOCK_MONOTONIC, as the tracer's events
  virtual void sleep_ms(int ms) = 0;
  virtual double clock_ticks_per_s() = 0;  // /proc's CPU time unit
  virtual std::uint64_t page_bytes() = 0;  // /proc's RSS unit
};

DiagnoseOutcome run_diagnose_session(const DiagnoseRequest& request, DiagnosePlatform& platform, DiagnoseIo& io);

}  // namespace gpufeed::app
