#pragma once
// What `gpufeed monitor` exports each interval: the window's figures (the
// same Evidence and findings diagnose reports) as Prometheus families and as
// one JSON Lines record, plus counters that only grow while it runs, so
// Prometheus can take rates over any range of its own. docs/monitor.md
// lists every metric. Pure.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/diagnose/findings.hpp"
#include "gpufeed/document.hpp"
#include "gpufeed/monitor/finding_log.hpp"
#include "gpufeed/monitor/gpu_window.hpp"
#include "gpufeed/monitor/prometheus_text.hpp"

namespace gpufeed {

// Upper bounds (seconds) of the slow-call histogram's buckets.
const std::vector<double>& slow_call_bounds();

// "stat", "open", "read" or "other": the call class a slow call's
// histogram and p50/p99 are kept under.
std::string call_class(int nr);

struct BucketCounts {
  std::vector<std::uint64_t> buckets;  // cumulative, one per bound
  double sum_s = 0;
  std::uint64_t count = 0;
  void add(double seconds, const std::vector<double>& bounds);
};

// Counters since monitoring started. They never shrink: a worker that exits
// keeps its CPU time in its rank's total.
class MonitorTotals {
 public:
  void add_wait(const WaitSpan& w);
  void add_slow_call(const SlowCall& c);
  void worker_started(int rank) { ++workers_started_[rank]; }
  // The CPU a worker has used so far (seconds), read each interval.
  void worker_cpu(int pid, int rank, double cpu_s);
  void worker_gone(int pid);  // its last reading stays in the total
  void finding_started(const std::string& id) { ++finding_starts_[id]; }

  const std::map<int, double>& loop_wait_s() const { return loop_wait_s_; }
  const std::map<int, std::uint64_t>& loop_waits() const { return loop_waits_; }
  std::map<int, double> worker_cpu_s() const;
  const std::map<int, std::uint64_t>& workers_started() const { return workers_started_; }
  const std::map<std::pair<std::string, std::string>, BucketCounts>& slow_calls() const { return slow_; }
  const std::map<std::string, std::uint64_t>& finding_starts() const { return finding_starts_; }
  std::size_t live_workers_held() const { return live_cpu_.size(); }

 private:
  std::map<int, double> loop_wait_s_;
  std::map<int, std::uint64_t> loop_waits_;
  std::map<int, double> done_cpu_s_;                   // rank -> exited workers' CPU
  std::map<int, std::pair<int, double>> live_cpu_;     // pid -> (rank, CPU so far)
  std::map<int, std::uint64_t> workers_started_;
  std::map<std::pair<std::string, std::string>, BucketCounts> slow_;  // (mount, call class)
  std::map<std::string, std::uint64_t> finding_starts_;
};

struct MonitorLabels {
  std::string job;   // --job, else the first rank's command name
  std::string node;  // the host name
};

// Everything one export reads.
struct MonitorView {
  double uptime_s = 0;
  double window_s = 0;                  // the window the gauges cover
  int ranks = 1;
  const Evidence* window = nullptr;     // the sliding window's evidence
  const std::vector<SyscallStat>* cumulative = nullptr;  // the tracer's histograms since start
  const std::map<std::string, ActiveFinding>* active = nullptr;
  const MonitorTotals* totals = nullptr;
  std::map<int, std::map<char, int>> worker_states;  // rank -> state -> live workers, now
  std::uint64_t events_dropped = 0;
  const GpuWindow* gpu = nullptr;       // null: no GPU sampler
  std::vector<int> job_gpus;            // the job's GPUs (empty: not known, all count)
  int batch_size = 0;                   // samples per batch (0: not known)
};

// Samples the loops take per joule of their GPUs' energy, over the window:
// all ranks' batches per second x the batch size over the mean power of the
// job's GPUs (all GPUs when the job's are not known). nullopt without a
// batch size, a loop rate or a power reading.
std::optional<double> samples_per_joule(const MonitorView& v);

// Per rank, over the window: the share of the loop's time (from its first
// wait) spent in waits for data.
std::map<int, double> data_wait_by_rank(const Evidence& e);

std::vector<prom::Family> monitor_families(const MonitorView& v, const MonitorLabels& labels);
Json monitor_record(const MonitorView& v, const MonitorLabels& labels);  // {"type": "sample", ...}
Json finding_record(const FindingChange& c, const MonitorLabels& labels);  // {"type": "finding", ...}
std::string finding_line(const FindingChange& c);  // for people: "finding started: ..."

}  // namespace gpufeed
