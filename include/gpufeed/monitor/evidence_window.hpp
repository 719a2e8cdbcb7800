#pragma once
// `gpufeed monitor`'s sliding window: the same Evidence diagnose builds for
// its one window, rebuilt at any moment from the last `window_s` seconds of
// a run that never ends. Memory is bounded whatever the run's length or the
// number of worker generations: at most `max_ticks` snapshots (spaced
// window / (max_ticks - 1) apart), at most `max_events` slow calls and as
// many waits (the oldest go first, and are counted), and only the processes
// alive or seen inside the window. Pure: the monitor session feeds it from
// the tracer and /proc, unit tests by hand.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/cpulist.hpp"
#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/diagnose/proc_stats.hpp"

namespace gpufeed {

struct ProcessTick {
  std::uint64_t cpu_ticks = 0;  // utime + stime
  char state = '?';
  std::uint64_t rss_bytes = 0;
};

// One look at the host and the traced processes; times are seconds since
// the monitor started.
struct WindowTick {
  double t_s = 0;
  std::vector<SyscallStat> syscalls;  // the tracer's cumulative histograms
  std::optional<ProcStat> stat;
  std::map<std::string, std::uint64_t> psi_total_us;  // "cpu", "io", "memory"
  MemInfo mem;
  std::map<int, ProcessTick> processes;  // live traced processes
};

struct WindowSettings {
  double window_s = 30;
  std::size_t max_ticks = 31;
  std::size_t max_events = 100000;
  double clock_ticks_per_s = 100;  // sysconf(_SC_CLK_TCK)
};

// What the host looks like to the job, for the evidence.
struct WindowHost {
  int ranks = 1;
  bool ebpf = false;
  std::string ebpf_unavailable;
  double slow_threshold_ms = 1.0;
  int usable_cpus = 0;
  CpuList cpus;
};

class EvidenceWindow {
 public:
  explicit EvidenceWindow(WindowSettings settings = {});

  // A process to follow from `t_s`; `born_now`: all its CPU time is the
  // run's (a worker forked while monitored). Again for a known pid: ignored.
  void track(int pid, int ppid, int rank, bool worker, const std::string& comm, double t_s, bool born_now);
  void exited(int pid, double t_s, std::optional<int> exit_code = std::nullopt);
  void add_tick(WindowTick tick);
  void add_slow_call(SlowCall call);  // t_s since the monitor started
  void add_wait(WaitSpan wait);

  // The last window_s seconds (less while the run is younger) as diagnose's
  // evidence: times from the window's start, CPU and histograms as deltas.
  Evidence evidence(const WindowHost& host) const;

  double now_s() const { return latest_ ? latest_->t_s : 0.0; }
  double span_s() const;  // how much of the window the snapshots cover
  std::size_t processes_held() const { return processes_.size(); }
  std::size_t ticks_held() const { return ticks_.size() + (latest_ ? 1 : 0); }
  std::size_t events_held() const { return slow_.size() + waits_.size(); }
  std::uint64_t events_dropped() const { return dropped_; }  // over max_events

 private:
  struct Followed {
    ProcessInfo info;
    bool born_now = false;
    bool has_reading = false;
    ProcessTick first;  // the first reading: the base of one not born in the run
    ProcessTick last;   // the newest reading (kept after exit)
  };
  const WindowTick* start() const;  // the oldest snapshot inside the window
  void prune();

  WindowSettings settings_;
  std::deque<WindowTick> ticks_;      // kept snapshots, oldest first
  std::optional<WindowTick> latest_;  // the newest, always current
  std::map<int, Followed> processes_;
  std::deque<SlowCall> slow_;
  std::deque<WaitSpan> waits_;
  std::uint64_t dropped_ = 0;
};

}  // namespace gpufeed
