// Traces a trial's job for tune's data-wait metric (job_wait_trace.hpp).
#include "gpufeed/trace/job_wait_trace.hpp"

#include <time.h>

#include <algorithm>
#include <string>

#include "gpufeed/probe/host_inspector.hpp"
#include "gpufeed/trace/bpf_tracer.hpp"
#include "gpufeed/trace/proc_reader.hpp"
#include "gpufeed/tune/job_cpu.hpp"

namespace gpufeed {
namespace {

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // the clock of the tracer's events
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

std::optional<std::string> JobWaitTrace::unavailable_reason() {
  return BpfTracer::unavailable_reason(inspect_process(HostPaths{}, InspectOptions{false, false}));
}

JobWaitTrace::JobWaitTrace(int job_pid, int ranks, double settle_s)
    : job_(job_pid),
      ranks_(ranks < 1 ? 1 : ranks),
      settle_ns_(static_cast<std::uint64_t>(std::max(0.0, settle_s) * 1e9)),
      tracer_(std::make_unique<BpfTracer>(TracerSettings{1.0, 0.5, false})) {}

JobWaitTrace::~JobWaitTrace() = default;

double JobWaitTrace::window_seconds() const {
  return window_ns_ ? static_cast<double>(now_ns() - window_ns_) / 1e9 : 0.0;
}

std::vector<int> JobWaitTrace::find_loops() const {
  const ProcReader proc;
  std::vector<tune::JobProcess> tree;
  std::vector<int> pids = proc.children_of(job_);
  pids.push_back(job_);
  for (int pid : pids) {
    if (const auto stat = proc.pid_stat(pid)) tree.push_back({stat->pid, stat->ppid, 0.0});
  }
  // A loop's workers are forks of it (the same command line), or, under the
  // spawn start method, multiprocessing's children. Before the workers
  // start, the job's Python is itself a leaf, and the shell that started it
  // would pass for a loop.
  std::vector<int> loops;
  for (const auto& loop : tune::job_loops(tree)) {
    const std::string cmd = proc.cmdline(loop.pid);
    if (cmd.empty()) continue;  // gone, or a kernel thread
    const bool forked = std::any_of(loop.workers.begin(), loop.workers.end(), [&](int w) {
      const std::string worker_cmd = proc.cmdline(w);
      return worker_cmd == cmd || worker_cmd.find("multiprocessing") != std::string::npos;
    });
    if (!forked) continue;
    // Under forkserver the workers' parent is the fork server, a child of
    // the loop (which therefore is no parent of leaves alone).
    if (cmd.find("forkserver") != std::string::npos) {
      const auto self = std::find_if(tree.begin(), tree.end(), [&](const auto& p) { return p.pid == loop.pid; });
      if (self != tree.end()) loops.push_back(self->ppid);
      continue;
    }
    loops.push_back(loop.pid);
  }
  std::sort(loops.begin(), loops.end());
  return loops;
}

bool JobWaitTrace::tick() {
  if (!tracer_) return attached();
  const std::uint64_t now = now_ns();
  if (!attached() && now - last_look_ns_ >= 100000000ULL) {
    last_look_ns_ = now;
    // The same loops on two looks in a row: between a fork and its exec, a
    // launcher's child still has the launcher's command line.
    std::vector<int> loops = find_loops();
    const bool steady = !loops.empty() && loops == last_loops_;
    last_loops_ = std::move(loops);
    // All ranks at once: a rank attached late would count fewer steps.
    if (steady && static_cast<int>(last_loops_.size()) >= ranks_) {
      int rank = 0;
      // The loops alone: the metric reads their waits, and tracing every
      // call of a CPU-bound job's workers slows them (bench/README.md,
      // trace_overhead.py).
      for (int loop : last_loops_) tracer_->add_process(loop, false, rank++);
      loops_ = rank;
      attached_ns_ = now_ns();
    }
  }
  if (attached() && !window_ns_ && now_ns() - attached_ns_ >= settle_ns_) {
    window_ns_ = now_ns();
    before_ = tracer_->histograms();
    waits_.clear();
  }
  const std::uint64_t from = window_ns_ ? window_ns_ : attached_ns_;
  tracer_->poll(0, [this, from](const TraceEvent& ev) {
    if (ev.type != TraceEventType::Wait || !attached() || ev.start_ns < from) return;
    waits_.push_back({static_cast<double>(ev.start_ns - from) / 1e9, static_cast<double>(ev.dur_ns) / 1e6, ev.tgid,
                      ev.rank, ev.nr});
  });
  return attached();
}

Evidence JobWaitTrace::finish() {
  tick();  // the last events
  Evidence e;
  e.ebpf = attached();
  const std::uint64_t from = window_ns_ ? window_ns_ : attached_ns_;
  e.window_s = attached() ? static_cast<double>(now_ns() - from) / 1e9 : 0.0;
  e.ranks = std::max(1, loops_);
  e.waits = std::move(waits_);
  if (tracer_) {
    e.syscalls = tracer_->histograms();
    for (auto& s : e.syscalls) {  // less what the settling second spent
      for (const auto& b : before_) {
        if (b.nr == s.nr && b.role == s.role && b.kind == s.kind) s.hist = s.hist.since(b.hist);
      }
    }
    e.events_dropped = tracer_->counters().events_dropped;
  }
  tracer_.reset();  // detach before the job is stopped
  return e;
}

}  // namespace gpufeed
