#pragma once
// What `gpufeed diagnose` measured in its window, as plain values. Filled by
// the tracer, the /proc sampler and (later) the GPU sampler; read by the
// rules (findings.hpp). Unit tests build it by hand.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/diagnose/histogram.hpp"
#include "gpufeed/gpu/sampler.hpp"

namespace gpufeed {

// Who made a call. LOOP is the training loop's thread (the main thread of a
// rank's process); LOOP_THREADS its other threads (PyTorch's pin-memory
// thread); WORKER a DataLoader worker's main thread, where samples are
// loaded; WORKER_THREADS the worker's helper threads (queue feeder).
enum class Role { Loop = 0, LoopThreads = 1, Worker = 2, WorkerThreads = 3 };
// What the call's fd or argument was (see bpf/diagnose.h).
// Create: an open with O_CREAT (PyTorch's shared-memory batches, outputs),
// not a dataset file.
enum class CallKind { None = 0, File = 1, Pipe = 2, Socket = 3, OtherFd = 4, Path = 5, FdStat = 6, Create = 7 };

std::string role_name(Role r);
std::string call_kind_name(CallKind k);
// "openat", "newfstatat(path)", "read(pipe)" ...
std::string call_label(int nr, CallKind kind);

struct SyscallStat {
  int nr = 0;
  Role role = Role::Loop;
  CallKind kind = CallKind::None;
  LatencyHistogram hist;
};

struct SlowCall {
  double t_s = 0;       // since the window started
  double dur_ms = 0;
  int pid = 0;
  int tid = 0;
  int rank = 0;
  Role role = Role::Worker;
  int nr = 0;
  CallKind kind = CallKind::Path;
  long long ret = 0;
  std::string path;         // absolute when it could be resolved
  std::string mount_point;  // empty when unknown
  std::string fs_type;
};

// The training loop blocked waiting for another thread or process.
struct WaitSpan {
  double t_s = 0;
  double dur_ms = 0;
  int pid = 0;
  int rank = 0;
  int nr = 0;
};

struct ProcessInfo {
  int pid = 0;
  int ppid = 0;
  int rank = 0;
  bool worker = false;
  std::string comm;
  double first_seen_s = 0;  // in the window
  double last_seen_s = 0;
  bool exited = false;
  std::optional<int> exit_code;
  double cpu_s = 0;             // on-CPU time inside the window
  std::map<char, int> states;   // samples per /proc state (R, S, D ...)
  std::uint64_t max_rss_bytes = 0;

  // A process as first seen at `t_s`: a rank's main process or a worker.
  static ProcessInfo seen(int pid, int rank, bool worker, double t_s) {
    ProcessInfo p;
    p.pid = pid;
    p.rank = rank;
    p.worker = worker;
    p.first_seen_s = p.last_seen_s = t_s;
    return p;
  }
};

// What sampling /proc/PID/syscall saw (the /proc-only estimate of where time goes).
struct SyscallSamples {
  int loop_samples = 0;
  int loop_waiting = 0;        // blocked in a wait-class call
  int worker_samples = 0;
  int worker_waiting = 0;      // idle: waiting for the next index
  int worker_in_io = 0;        // in open/stat/read of a file
  int worker_running = 0;
};

struct HostSample {
  double t_s = 0;
  double cpu_busy_pct = 0;
  double cpu_iowait_pct = 0;
};

struct CpuCoreUse {
  int cpu = 0;
  double busy_pct = 0;
  double iowait_pct = 0;
};

struct HostActivity {
  int usable_cpus = 0;
  std::vector<CpuCoreUse> per_cpu;  // each of the job's CPUs over the window
  std::vector<HostSample> series;  // one per /proc sample, for the timeline
  double cpu_busy_pct = 0;       // of usable CPUs, average over the window
  double cpu_iowait_pct = 0;
  double ctx_switches_per_s = 0;
  std::optional<double> psi_cpu_some_pct;  // share of the window with some task stalled
  std::optional<double> psi_io_some_pct;
  std::optional<double> psi_memory_some_pct;
  std::uint64_t mem_available_bytes = 0;
  std::uint64_t page_cache_bytes = 0;
  int samples = 0;
  double sample_hz = 0;
};

// GPU activity during the window (or from a recorded trace).
struct GpuEvidence {
  std::string backend;             // "nvml", "rocm-smi", or the trace's backend
  std::string source = "live";     // "live" or the trace file
  double sample_hz = 0;
  std::vector<GpuDevice> devices;
  std::vector<int> job_devices;    // indices the traced job uses
  std::string job_devices_from;    // how we know: "GPU process list", "CUDA_VISIBLE_DEVICES", ...
  std::vector<GpuSample> samples;  // polled readings
  std::vector<GpuSample> buffered; // finer busy samples from the vendor, when offered
  std::optional<double> job_samples_per_s;  // the job's throughput, when the user gave it
};

struct Evidence {
  double window_s = 0;
  int ranks = 1;
  bool ebpf = false;                 // syscall tracing ran
  std::string ebpf_unavailable;      // why not, for the report
  double slow_threshold_ms = 1.0;
  std::uint64_t events_dropped = 0;

  std::vector<SyscallStat> syscalls;
  std::vector<SlowCall> slow_calls;
  std::vector<WaitSpan> waits;
  std::vector<ProcessInfo> processes;
  SyscallSamples sampled;
  HostActivity host;
  bool gpu_measured = false;       // GPU samples were taken (gpu is set and has samples)
  std::optional<GpuEvidence> gpu;
  std::string gpu_unavailable;     // why GPU activity was not measured
};

// Figures derived from Evidence, shared by the rules and the report.
struct LoaderFigures {
  std::optional<double> data_wait_fraction;  // of the loop's wall time
  bool data_wait_sampled = false;            // from /proc sampling, not eBPF
  double loop_active_s = 0;                  // from the loop's first wait to the window's end
  int max_workers_per_rank = 0;              // most workers alive at once in a rank
  int workers_total = 0;                     // distinct worker processes seen
  int live_workers = 0;                      // alive at the end, all ranks
  double worker_wall_s = 0;
  double worker_wait_s = 0;                  // waiting for work (idle)
  double worker_io_s = 0;                    // in file and path calls
  double worker_cpu_s = 0;
  std::optional<double> worker_busy_fraction;  // 1 - wait / wall
  std::optional<double> worker_io_share;       // of busy time
  std::optional<double> worker_cpu_share;      // of busy time
  double worker_d_state_share = 0;             // of worker samples
  std::uint64_t worker_opens = 0;
  std::uint64_t worker_read_bytes = 0;
  std::uint64_t worker_file_reads = 0;
};

LoaderFigures loader_figures(const Evidence& e);

// The training loop's step as seen from its data waits: in a loop that waits
// for (nearly) every batch, the time from the end of one wait to the start of
// the next is one step's compute (forward, backward, the loop's own Python),
// whatever the job's code says its step is. `gpufeed tune --from` uses it.
struct LoopStep {
  std::optional<double> median_ms;  // absent when it cannot be told; see `unavailable`
  double spread_ms = 0;             // standard deviation of the 10-90% gaps
  double p10_ms = 0, p90_ms = 0;
  int cycles = 0;                   // wait-to-wait gaps seen, all ranks (split waits too)
  int steps = 0;                    // steps those gaps held: split waits left out, k for a k-step gap
  double ready_fraction = 0;        // share of steps that found their batch ready (no wait)
  int loops = 0;                    // training loops (ranks) whose waits were seen
  double span_s = 0;                // mean per loop: end of its first wait to end of its last
  std::string unavailable;          // why there is no estimate
};
// Waits closer than `merge_ms` are one wait (a batch is received in several
// calls); at least `min_cycles` gaps are needed. A loop that finds most
// batches ready has gaps spanning several steps: the step is the one whose
// whole multiples the gaps are (evidence.cpp), else, when the gaps are
// regular (p10 >= `min_regularity` x median), their median; otherwise no
// estimate. The figures come from the one-step gaps. `known_step_ms`: the
// gaps are multiples of this step instead (tune's data-wait metric, where
// a loop fed every other batch by two workers has gaps of two steps only,
// which the gaps alone cannot tell from one slower step).
LoopStep loop_step(const Evidence& e, double merge_ms = 1.0, int min_cycles = 8, double min_regularity = 0.55,
                   std::optional<double> known_step_ms = std::nullopt);

// Latency of a class of path calls (stat-like or open) across all traced
// processes: exact from slow calls above the threshold, log2 buckets below.
struct PathLatency {
  std::uint64_t calls = 0;
  std::optional<double> p50_ms;
  std::optional<double> p99_ms;
  double total_s = 0;
};
PathLatency path_latency(const Evidence& e, bool stats /* false: opens */, const std::string& mount = "");

// Slow path and file calls grouped by mount and directory prefix.
struct SlowGroup {
  std::string mount_point;
  std::string fs_type;
  std::string prefix;
  std::uint64_t calls = 0;
  std::uint64_t stat_calls = 0;
  std::uint64_t open_calls = 0;
  std::uint64_t read_calls = 0;
  double total_s = 0;
  std::optional<double> stat_p50_ms, stat_p99_ms, open_p50_ms, open_p99_ms, read_p50_ms;
};
std::vector<SlowGroup> slow_groups(const Evidence& e);  // most total time first

}  // namespace gpufeed
