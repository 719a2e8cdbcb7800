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
#include "gpufeed/diagnose/trace_events.hpp"
#include "gpufeed/process_view.hpp"

namespace gpufeed {

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
