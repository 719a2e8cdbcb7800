// The diagnose session's policy: what to trace, when the window ends, and
// what goes into the evidence. The machine is behind DiagnosePlatform.
#include "gpufeed/app/diagnose_session.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "gpufeed/diagnose/syscalls.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/gpu/trace.hpp"
#include "gpufeed/gpu/vendors.hpp"
#include "gpufeed/input_file.hpp"
#include "gpufeed/wait_status.hpp"

namespace gpufeed::app {
namespace {

struct Tracked {
  ProcessInfo info;
  std::uint64_t base_ticks = 0;
  std::uint64_t last_ticks = 0;
  bool sampled = false;
};

class Session {
 public:
  Session(const DiagnoseRequest& req, DiagnosePlatform& platform, DiagnoseIo& io)
      : req_(req), platform_(platform), io_(io), proc_(platform.proc()) {}

  DiagnoseOutcome run() {
    validate();
    start_tracer();
    platform_.catch_stop_signals();
    std::unique_ptr<LaunchedCommand> launch;
    std::vector<DiagnosisTarget> targets;
    start_ns_ = platform_.now_ns();
    if (!req_.command.empty()) {
      launch = platform_.launch(req_.command);
      track(launch->pid(), 0, false, 0.0, true);
      if (tracer_) tracer_->add_process(launch->pid(), false, 0);
      launch->release();
      std::string cmd;
      for (const auto& a : req_.command) cmd += (cmd.empty() ? "" : " ") + a;
      targets.push_back({launch->pid(), 0, cmd});
    } else {
      for (size_t rank = 0; rank < req_.pids.size(); ++rank) {
        const int pid = req_.pids[rank];
        const int r = static_cast<int>(rank);
        track(pid, r, false, 0.0, false);
        if (tracer_) tracer_->add_process(pid, false, r);
        // Children that exist already; later ones are caught by the fork hook.
        for (int child : proc_.children_of(pid)) {
          track(child, r, true, 0.0, false);
          if (tracer_) tracer_->add_process(child, true, r);
        }
        targets.push_back({pid, r, proc_.cmdline(pid)});
      }
    }
    for (const auto& t : targets) main_pids_.insert(t.pid);
    // Read now: a job that exits during the window takes its environment with it.
    target_environ_ = proc_.read(fmt::format("/proc/{}/environ", targets.front().pid)).value_or("");
    start_gpu();
    const HostCpus host = platform_.host_cpus();
    usable_cpus_ = usable_cpus(host, targets.front().pid);
    cpus_ = proc_.allowed_cpus(targets.front().pid).value_or(host.allowed);

    DiagnoseOutcome outcome;
    const auto deadline = start_ns_ + static_cast<std::uint64_t>(req_.duration_s * 1e9);
    const auto sample_every = static_cast<std::uint64_t>(1e9 / std::max(1.0, req_.sample_hz));
    std::uint64_t next_sample = start_ns_, next_progress = start_ns_ + 1000000000ULL;
    std::string end_reason = "duration";
    sample(0.0);
    if (!io_.quiet) announce(targets);
    while (true) {
      const std::uint64_t now = platform_.now_ns();
      if (platform_.stop_requested()) {
        end_reason = "interrupted";
        outcome.interrupted = true;
        break;
      }
      if (now >= deadline) break;
      if (launch && !outcome.command_status) {
        outcome.command_status = launch->try_wait();
      }
      if (all_targets_exited(outcome)) {
        end_reason = "target exited";
        break;
      }
      if (now >= next_sample) {
        sample(seconds(now));
        next_sample += sample_every;
        if (next_sample < now) next_sample = now + sample_every;
      }
      if (io_.progress && now >= next_progress) {
        progress(now, deadline);
        next_progress += 1000000000ULL;
      }
      const std::uint64_t wake = std::min<std::uint64_t>({next_sample, deadline, now + 100000000ULL});
      const int timeout_ms = static_cast<int>((wake > now ? wake - now : 0) / 1000000ULL);
      if (tracer_) {
        tracer_->poll(std::max(timeout_ms, 1), [this](const TraceEvent& ev) { on_event(ev); });
      } else {
        platform_.sleep_ms(std::max(timeout_ms, 1));
      }
    }
    if (launch && !outcome.command_status && procs_[launch->pid()].info.exited) {
      // It exited: reap it (it may take a moment to become a zombie) so the
      // report carries its exit code.
      for (int i = 0; i < 100 && !outcome.command_status; ++i) {
        outcome.command_status = launch->try_wait();
        if (!outcome.command_status) platform_.sleep_ms(10);
      }
    }
    const std::uint64_t end_ns = platform_.now_ns();
    if (tracer_) tracer_->poll(0, [this](const TraceEvent& ev) { on_event(ev); });  // drain
    sample(seconds(end_ns));
    if (io_.progress) io_.err << "\r\033[K" << std::flush;

    Evidence e = evidence(end_ns);
    tracer_.reset();  // detach before anything else can go wrong
    add_gpu_evidence(e);
    outcome.report = make_diagnosis(targets, std::move(e), req_.thresholds);
    outcome.report.launched = launch != nullptr;
    outcome.report.end_reason = end_reason;
    outcome.report.command_exit_code = outcome.command_status;
    if (launch && !outcome.command_status) outcome.launched_pid = launch->pid();
    return outcome;
  }

 private:
  void validate() const {
    if (req_.pids.empty() == req_.command.empty()) {
      throw usage_error("give either --pid PID (one per rank) or -- CMD ARGS...",
                        "e.g. gpufeed diagnose --pid 4242, or gpufeed diagnose -- python train.py");
    }
    if (req_.duration_s <= 0) throw usage_error("--duration must be positive", "e.g. --duration 30");
    require_target_pids(proc_, req_.pids);
  }

  void start_tracer() {
    std::optional<std::string> why;
    if (req_.ebpf == EbpfMode::Off) {
      why = "disabled by --no-ebpf";
    } else {
      why = platform_.tracing_unavailable();
    }
    try {
      if (!why) tracer_ = platform_.open_tracer(TracerSettings{req_.slow_call_ms, 0.5});
    } catch (const Error& e) {
      if (req_.ebpf == EbpfMode::Required) throw;
      why = e.what();
    }
    if (why) {
      if (req_.ebpf == EbpfMode::Required) {
        throw Error(ErrorKind::Privilege, "eBPF tracing is not available: " + *why,
                    "run as root, or drop --require-ebpf for a /proc-only diagnosis");
      }
      reason_ = *why;
      if (!io_.quiet) io_.err << "gpufeed: note: eBPF tracing is not available (" << *why
              << "); continuing with a /proc-only diagnosis (lower confidence)\n";
    }
  }

  void start_gpu() {
    if (!req_.gpu_trace.empty()) {
      replay_ = read_gpu_trace(read_input_file(req_.gpu_trace, {"GPU trace", "give a file written by 'gpufeed gpu record'"}),
                               req_.gpu_trace);
      return;
    }
    GpuSamplerOpen opened = platform_.open_gpu_sampler(req_.gpu);
    if (!opened.sampler) {
      gpu_unavailable_ = opened.unavailable;
      return;
    }
    gpu_sampler_ = std::move(opened.sampler);
    gpu_thread_ = std::make_unique<GpuSamplingThread>(*gpu_sampler_, req_.gpu_hz,
                                                      [this] { return seconds(platform_.now_ns()); });
  }

  // The GPUs the job uses: the vendor's process list, else the job's
  // *_VISIBLE_DEVICES, else all of them.
  void add_gpu_evidence(Evidence& e) {
    GpuTrace trace;
    GpuEvidence g;
    if (replay_) {
      trace = *replay_;
      g.source = req_.gpu_trace;
    } else if (gpu_thread_) {
      gpu_thread_->stop();
      trace = gpu_thread_->trace();
    } else {
      e.gpu_unavailable = gpu_unavailable_;
      return;
    }
    g.backend = trace.backend;
    g.job_samples_per_s = req_.samples_per_s;
    g.sample_hz = trace.sample_hz;
    g.devices = trace.devices;
    g.samples = std::move(trace.samples);
    g.buffered = std::move(trace.buffered);
    if (gpu_sampler_) {
      for (const auto& d : g.devices) {
        for (const auto& p : gpu_sampler_->processes(d.index)) {
          if (procs_.count(p.pid)) g.job_devices.push_back(d.index);
        }
      }
      std::sort(g.job_devices.begin(), g.job_devices.end());
      g.job_devices.erase(std::unique(g.job_devices.begin(), g.job_devices.end()), g.job_devices.end());
      if (!g.job_devices.empty()) g.job_devices_from = "GPU process list";
    }
    if (g.job_devices.empty()) {
      if (auto visible = visible_devices_in_environ(target_environ_)) {
        g.job_devices = visible->devices;
        g.job_devices_from = visible->variable;
      }
    }
    if (g.job_devices_from.empty()) g.job_devices_from = "all GPUs (the job's GPUs are not known)";
    e.gpu_measured = !g.samples.empty() || !g.buffered.empty();
    if (!e.gpu_measured) e.gpu_unavailable = "the GPU sampler returned no samples";
    e.gpu = std::move(g);
  }

  int usable_cpus(const HostCpus& host, int pid) const {
    if (auto cpus = proc_.allowed_cpus(pid)) {
      if (!cpus->empty()) return static_cast<int>(cpus->size());
    }
    return host.usable;
  }

  double seconds(std::uint64_t ns) const { return ns > start_ns_ ? static_cast<double>(ns - start_ns_) / 1e9 : 0.0; }

  void track(int pid, int rank, bool worker, double t, bool forked_in_window) {
    auto [it, inserted] = procs_.try_emplace(pid);
    if (!inserted) return;
    Tracked& p = it->second;
    p.info = ProcessInfo::seen(pid, rank, worker, t);
    if (auto s = proc_.pid_stat(pid)) {
      p.info.comm = s->comm;
      p.info.ppid = s->ppid;
      // A process born in the window spent all its CPU time in it.
      p.base_ticks = forked_in_window ? 0 : s->utime + s->stime;
      p.last_ticks = s->utime + s->stime;
    }
  }

  // True when every rank's process has gone (exited, or reaped when launched).
  bool all_targets_exited(const DiagnoseOutcome& outcome) {
    for (int pid : main_pids_) {
      Tracked& p = procs_[pid];
      if (p.info.exited) continue;
      if (outcome.command_status || !proc_.alive(pid)) {
        p.info.exited = true;
        p.info.last_seen_s = seconds(platform_.now_ns());
        if (outcome.command_status && !p.info.exit_code) p.info.exit_code = outcome.command_status;
        continue;
      }
      return false;
    }
    return true;
  }

  void on_event(const TraceEvent& ev) {
    const double t = seconds(ev.start_ns);
    switch (ev.type) {
      case TraceEventType::SlowCall: {
        SlowCall c = platform_.slow_call(ev, t);
        slow_.push_back(std::move(c));
        break;
      }
      case TraceEventType::Wait:
        waits_.push_back({t, static_cast<double>(ev.dur_ns) / 1e6, ev.tgid, ev.rank, ev.nr});
        wait_ms_ += static_cast<double>(ev.dur_ns) / 1e6;
        break;
      case TraceEventType::Fork:
        track(ev.other_pid, ev.rank, true, t, true);
        break;
      case TraceEventType::Exit: {
        auto it = procs_.find(ev.tgid);
        if (it != procs_.end()) {
          it->second.info.exited = true;
          it->second.info.last_seen_s = t;
          it->second.info.exit_code = exit_code_of(ev.other_pid);
        }
        break;
      }
    }
  }

  // One /proc sample: host CPU, PSI, memory, and every traced process.
  void sample(double t) {
    ++samples_;
    if (auto st = proc_.stat()) {
      if (!first_stat_) first_stat_ = st;
      if (last_stat_) {
        CpuUse use = cpu_use(*last_stat_, *st, cpus_);
        series_.push_back({t, use.busy_pct, use.iowait_pct});
      }
      last_stat_ = st;
    }
    for (const char* res : {"cpu", "io", "memory"}) {
      if (auto v = proc_.pressure_total_us(res)) {
        first_psi_.try_emplace(res, *v);
        last_psi_[res] = *v;
      }
    }
    if (auto m = proc_.meminfo()) mem_ = *m;
    for (auto& [pid, p] : procs_) {
      if (p.info.exited) continue;
      auto s = proc_.pid_stat(pid);
      if (!s || s->state == 'Z' || s->state == 'X') {
        p.info.exited = true;
        p.info.last_seen_s = t;
        continue;
      }
      p.info.last_seen_s = t;
      p.info.comm = s->comm;
      p.info.ppid = s->ppid;
      p.last_ticks = s->utime + s->stime;
      p.info.states[s->state] += 1;
      p.info.max_rss_bytes = std::max<std::uint64_t>(p.info.max_rss_bytes, s->rss_pages * platform_.page_bytes());
      if (!tracer_) sample_syscall(p);
    }
  }

  // Without eBPF: what is the thread doing right now? (/proc/PID/syscall)
  void sample_syscall(Tracked& p) {
    std::optional<long> arg0;
    auto nr = proc_.current_syscall(p.info.pid, p.info.pid, &arg0);
    auto is_pipe = [&] {
      if (!arg0) return false;
      const auto target = proc_.fd_target(p.info.pid, static_cast<int>(*arg0));
      return target.rfind("pipe:", 0) == 0 || target.rfind("socket:", 0) == 0;
    };
    const bool waiting = nr && (sys::is_wait(*nr) || (sys::is_pipe_read(*nr) && is_pipe()));
    if (!p.info.worker) {
      ++sampled_.loop_samples;
      sampled_.loop_waiting += waiting;
      return;
    }
    ++sampled_.worker_samples;
    if (waiting) {
      ++sampled_.worker_waiting;
    } else if (nr && (sys::is_stat(*nr) || sys::is_open(*nr) || sys::is_read(*nr))) {
      ++sampled_.worker_in_io;
    } else {
      ++sampled_.worker_running;
    }
  }

  // Says what is traced once the window is open: a user knows Ctrl-C is
  // safe from here, and a script can wait for this line before sending it.
  void announce(const std::vector<DiagnosisTarget>& targets) {
    std::string pids;
    for (const auto& t : targets) pids += (pids.empty() ? "" : ", ") + std::to_string(t.pid);
    io_.err << fmt::format("gpufeed: tracing pid{} {} and {} for up to {:g} s; Ctrl-C ends the window and "
                           "still writes the report\n",
                           targets.size() > 1 ? "s" : "", pids,
                           targets.size() > 1 ? "their workers" : "its workers", req_.duration_s)
            << std::flush;
  }

  void progress(std::uint64_t now, std::uint64_t deadline) {
    const double elapsed = seconds(now);
    int alive = 0;
    for (const auto& [pid, p] : procs_) alive += !p.info.exited;
    io_.err << fmt::format("\r\033[K  tracing {:.0f}/{:.0f} s  {} processes  {} slow calls{}", elapsed,
                           seconds(deadline), alive, slow_.size(),
                           tracer_ && elapsed > 0 ? fmt::format("  data wait ~{:.0f}%", 100 * wait_ms_ / 1e3 / elapsed / main_pids_.size()) : "")
            << std::flush;
  }

  Evidence evidence(std::uint64_t end_ns) {
    Evidence e;
    e.window_s = seconds(end_ns);
    e.ranks = static_cast<int>(main_pids_.size());
    e.ebpf = tracer_ != nullptr;
    e.ebpf_unavailable = reason_;
    e.slow_threshold_ms = req_.slow_call_ms;
    if (tracer_) {
      e.syscalls = tracer_->histograms();
      const auto counters = tracer_->counters();
      e.events_dropped = counters.events_dropped + counters.starts_dropped;
    }
    e.slow_calls = std::move(slow_);
    e.waits = std::move(waits_);
    const double tick = platform_.clock_ticks_per_s();
    for (auto& [pid, p] : procs_) {
      p.info.cpu_s = static_cast<double>(p.last_ticks - std::min(p.last_ticks, p.base_ticks)) / tick;
      e.processes.push_back(p.info);
    }
    e.sampled = sampled_;
    HostActivity& h = e.host;
    h.usable_cpus = usable_cpus_;
    h.samples = samples_;
    h.sample_hz = req_.sample_hz;
    h.series = series_;
    if (first_stat_ && last_stat_) {
      CpuUse use = cpu_use(*first_stat_, *last_stat_, cpus_);
      h.cpu_busy_pct = use.busy_pct;
      h.cpu_iowait_pct = use.iowait_pct;
      for (int cpu : cpus_) {
        CpuUse one = cpu_use(*first_stat_, *last_stat_, {cpu});
        h.per_cpu.push_back({cpu, one.busy_pct, one.iowait_pct});
      }
      if (e.window_s > 0) h.ctx_switches_per_s = static_cast<double>(last_stat_->ctxt - first_stat_->ctxt) / e.window_s;
    }
    auto psi = [&](const char* res) -> std::optional<double> {
      if (!first_psi_.count(res) || e.window_s <= 0) return std::nullopt;
      return 100.0 * static_cast<double>(last_psi_[res] - first_psi_[res]) / (e.window_s * 1e6);
    };
    h.psi_cpu_some_pct = psi("cpu");
    h.psi_io_some_pct = psi("io");
    h.psi_memory_some_pct = psi("memory");
    h.mem_available_bytes = mem_.available_bytes;
    h.page_cache_bytes = mem_.cached_bytes;
    return e;
  }

  const DiagnoseRequest& req_;
  DiagnosePlatform& platform_;
  DiagnoseIo& io_;
  const ProcSource& proc_;
  std::unique_ptr<SyscallTracer> tracer_;
  std::unique_ptr<GpuSampler> gpu_sampler_;
  std::unique_ptr<GpuSamplingThread> gpu_thread_;
  std::optional<GpuTrace> replay_;
  std::string gpu_unavailable_;
  std::string target_environ_;
  std::string reason_;
  std::uint64_t start_ns_ = 0;
  std::set<int> main_pids_;
  std::map<int, Tracked> procs_;
  std::vector<SlowCall> slow_;
  std::vector<WaitSpan> waits_;
  double wait_ms_ = 0;
  SyscallSamples sampled_;
  int samples_ = 0;
  int usable_cpus_ = 0;
  CpuList cpus_;
  std::optional<ProcStat> first_stat_, last_stat_;
  std::map<std::string, std::uint64_t> first_psi_, last_psi_;
  MemInfo mem_;
  std::vector<HostSample> series_;
};

}  // namespace

DiagnoseOutcome run_diagnose_session(const DiagnoseRequest& request, DiagnosePlatform& platform, DiagnoseIo& io) {
  return Session(request, platform, io).run();
}

}  // namespace gpufeed::app
