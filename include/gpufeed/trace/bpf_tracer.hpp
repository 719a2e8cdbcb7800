#pragma once
// Adapter: the eBPF syscall tracer (bpf/diagnose.bpf.c through its libbpf
// skeleton). Construction loads and attaches the programs; destruction (or
// the process dying) detaches them: every attachment is a BPF link owned by
// a file descriptor of this process, so nothing outlives gpufeed.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/process_view.hpp"

namespace gpufeed {

struct TracerSettings {
  double slow_call_ms = 1.0;   // report path/file calls slower than this
  double wait_span_ms = 0.5;   // report loop waits longer than this
  // Trace the processes traced ones start (DataLoader workers). Off for
  // tune's data-wait metric, which reads the loop alone: each traced call
  // costs a CPU-bound job's workers time (bench/README.md, trace_overhead).
  bool follow_forks = true;
};

enum class TraceEventType { SlowCall = 1, Wait = 2, Fork = 3, Exit = 4 };

struct TraceEvent {
  TraceEventType type = TraceEventType::SlowCall;
  int tgid = 0;
  int tid = 0;
  int other_pid = 0;  // Fork: child pid; Exit: exit code (wait status)
  int nr = 0;
  Role role = Role::Worker;
  CallKind kind = CallKind::None;
  long long ret = 0;
  std::uint64_t start_ns = 0;  // CLOCK_MONOTONIC
  std::uint64_t dur_ns = 0;
  int fd = -1;
  unsigned dev = 0;
  int rank = 0;
  std::string path;                     // path-taking calls, as passed
  std::vector<std::string> components;  // fd-based calls: dentry names, leaf first
};

struct TracerCounters {
  std::uint64_t events_dropped = 0;
  std::uint64_t starts_dropped = 0;
  std::uint64_t procs_dropped = 0;
};

class BpfTracer {
 public:
  // Why eBPF tracing cannot run here (no BTF, missing capability), if so.
  static std::optional<std::string> unavailable_reason(const ProcessView& view);

  explicit BpfTracer(const TracerSettings& settings);  // throws gpufeed::Error
  ~BpfTracer();
  BpfTracer(const BpfTracer&) = delete;
  BpfTracer& operator=(const BpfTracer&) = delete;

  // Where the kernel side keeps calls in flight: "task storage" or, on
  // kernels without it (or GPUFEED_BPF_STARTS=hash), "hash by thread id".
  std::string call_store() const;

  // Puts a process in the traced set (its threads and later children follow).
  void add_process(int tgid, bool worker, int rank);
  // Waits up to timeout_ms for events; returns how many were handled.
  int poll(int timeout_ms, const std::function<void(const TraceEvent&)>& on_event);
  std::vector<SyscallStat> histograms() const;  // summed over CPUs
  TracerCounters counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpufeed
