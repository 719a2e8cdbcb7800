#pragma once
// What a syscall tracer reports: the values the eBPF adapter produces and
// the diagnose and monitor sessions consume. Plain values, so a session can
// be driven by a fake tracer.
#include <cstdint>
#include <string>
#include <vector>

#include "gpufeed/diagnose/evidence.hpp"

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

}  // namespace gpufeed
