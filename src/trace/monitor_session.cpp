#include "gpufeed/trace/monitor_session.hpp"

#include <malloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "gpufeed/error.hpp"
#include "gpufeed/monitor/evidence_window.hpp"
#include "gpufeed/gpu/vendor_samplers.hpp"
#include "gpufeed/gpu/vendors.hpp"
#include "gpufeed/monitor/finding_log.hpp"
#include "gpufeed/monitor/gpu_window.hpp"
#include "gpufeed/monitor/job_follow.hpp"
#include "gpufeed/monitor/monitor_metrics.hpp"
#include "gpufeed/os/process_group.hpp"
#include "gpufeed/os/stop_signals.hpp"
#include "gpufeed/trace/bpf_tracer.hpp"
#include "gpufeed/trace/proc_reader.hpp"
#include "held_launch.hpp"
#include "path_resolver.hpp"

namespace gpufeed {
namespace {

std::uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// A live traced process (exited ones leave: the window keeps what it needs).
struct Live {
  int rank = 0;
  bool worker = false;
  std::uint64_t base_ticks = 0;  // CPU before the monitor saw it
};

class Monitor {
 public:
  Monitor(const MonitorRequest& req, MonitorIo& io)
      : req_(req), io_(io), proc_(io.host), resolver_(proc_),
        window_(WindowSettings{req.window_s, 31, 100000, static_cast<double>(sysconf(_SC_CLK_TCK))}) {}

  MonitorOutcome run() {
    validate();
    // The endpoint first: a taken port fails before the job is touched.
    if (req_.listen) server_ = std::make_unique<MetricsServer>(*req_.listen);
    const ProcessView view = inspect_process(io_.host, InspectOptions{false, false});
    if (auto why = BpfTracer::unavailable_reason(view)) {
      throw Error(ErrorKind::Privilege, "gpufeed monitor needs eBPF tracing: " + *why,
                  "run as root (or with CAP_BPF and CAP_PERFMON)");
    }
    open_jsonl();
    open_gpu();
    tracer_ = std::make_unique<BpfTracer>(TracerSettings{req_.slow_call_ms, 0.5, true});
    os::StopOnSignal signals;
    start_ns_ = monotonic_ns();
    std::unique_ptr<Launch> launch;
    if (following()) {
      rescan();
      if (labels_.job.empty()) labels_.job = !req_.comm.empty() ? req_.comm : base_name(cgroup_dir_);
    } else if (!req_.command.empty()) {
      launch = std::make_unique<Launch>(req_.command);
      follow(launch->pid(), 0, false, true);
      launch->release();
      main_pids_.push_back(launch->pid());
      if (labels_.job.empty()) labels_.job = base_name(req_.command.front());
    } else {
      for (std::size_t r = 0; r < req_.pids.size(); ++r) {
        const int pid = req_.pids[r];
        follow(pid, static_cast<int>(r), false, false);
        for (int child : proc_.children_of(pid)) follow(child, static_cast<int>(r), true, false);
        main_pids_.push_back(pid);
      }
      if (labels_.job.empty()) labels_.job = proc_.pid_stat(req_.pids.front()) ? proc_.pid_stat(req_.pids.front())->comm : "job";
    }
    labels_.node = host_name();
    if (!req_.job.empty()) labels_.job = req_.job;
    cpus_ = main_pids_.empty() ? view.allowed_cpus : proc_.allowed_cpus(main_pids_.front()).value_or(view.allowed_cpus);
    usable_cpus_ = cpus_.empty() ? view.usable_cpus() : static_cast<int>(cpus_.size());
    announce();

    MonitorOutcome outcome;
    const std::uint64_t every = static_cast<std::uint64_t>(req_.interval_s * 1e9);
    const std::uint64_t deadline = req_.duration_s > 0 ? start_ns_ + static_cast<std::uint64_t>(req_.duration_s * 1e9) : 0;
    std::uint64_t next = start_ns_;
    double next_eval_s = 0;
    double next_trim_s = 10;
    outcome.end_reason = "interrupted";
    for (;;) {
      if (signals.last_signal()) break;
      const std::uint64_t now = monotonic_ns();
      if (deadline && now >= deadline) {
        outcome.end_reason = "duration";
        break;
      }
      if (launch && !outcome.command_status) {
        int status = 0;
        if (waitpid(launch->pid(), &status, WNOHANG) == launch->pid()) outcome.command_status = os::exit_code_of(status);
      }
      if (!following() && targets_gone(outcome)) {
        outcome.end_reason = "target exited";
        break;
      }
      if (now >= next) {
        const double t = seconds(now);
        if (following() && t >= next_scan_s_) {
          rescan();
          next_scan_s_ = t + 1;
        }
        tick(t);
        publish(t, t >= next_eval_s);
        if (t >= next_eval_s) next_eval_s = t + std::max(1.0, req_.interval_s);
        if (t >= next_trim_s) {
          // A burst of slow calls fills the window with entries that are freed
          // when it slides on; glibc keeps that freed heap as resident memory.
          // Monitor runs for days, so it hands the high-water mark back.
          malloc_trim(0);
          next_trim_s = t + 10;
        }
        ++outcome.intervals;
        next += every;
        if (next < now) next = now + every;
      }
      const std::uint64_t wake = std::min(next, deadline ? deadline : next);
      const std::uint64_t left = wake > monotonic_ns() ? wake - monotonic_ns() : 0;
      tracer_->poll(std::clamp(static_cast<int>(left / 1000000ULL), 1, 100), [this](const TraceEvent& ev) { on_event(ev); });
    }
    tracer_->poll(0, [this](const TraceEvent& ev) { on_event(ev); });
    tracer_.reset();
    if (launch && !outcome.command_status && outcome.end_reason == "target exited") {
      // It exited: reap it (it may take a moment to become a zombie) for its exit code.
      for (int i = 0; i < 100 && !outcome.command_status; ++i) {
        int status = 0;
        if (waitpid(launch->pid(), &status, WNOHANG) == launch->pid()) {
          outcome.command_status = os::exit_code_of(status);
        } else {
          usleep(10000);
        }
      }
    }  // detach before anything else can go wrong
    const double t_end = seconds(monotonic_ns());
    for (const auto& c : log_.close(t_end)) report(c);
    if (launch && !outcome.command_status) outcome.launched_pid = launch->pid();
    if (!io_.quiet) {
      io_.err << fmt::format("gpufeed: monitor stopped ({}) after {:.0f} s, {} intervals\n", outcome.end_reason, t_end,
                             outcome.intervals);
    }
    return outcome;
  }

 private:
  static std::string base_name(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
  }

  bool following() const { return !req_.comm.empty() || !req_.cgroup.empty(); }

  void validate() {
    const int ways = !req_.pids.empty() + !req_.command.empty() + following();
    if (ways != 1) {
      throw usage_error("give one of --pid PID (one per rank), --comm NAME / --cgroup DIR, or -- CMD ARGS...",
                        "e.g. gpufeed monitor --pid 4242, gpufeed monitor --comm python3, or gpufeed monitor -- python train.py");
    }
    if (req_.comm.size() > 15) {
      throw usage_error(fmt::format("--comm {} is longer than the kernel's 15-character command name", req_.comm),
                        fmt::format("give the name as 'ps -o comm' shows it, e.g. {}", req_.comm.substr(0, 15)));
    }
    if (!req_.cgroup.empty()) {
      cgroup_dir_ = req_.cgroup.front() == '/' ? req_.cgroup : "/sys/fs/cgroup/" + req_.cgroup;
      while (cgroup_dir_.size() > 1 && cgroup_dir_.back() == '/') cgroup_dir_.pop_back();
    }
    require_target_pids(proc_, req_.pids);
  }

  void open_jsonl() {
    if (req_.jsonl_path.empty() || req_.jsonl_path == "-") return;
    // Appended line by line: a log that a restarted monitor continues.
    jsonl_file_ = std::make_unique<std::ofstream>(req_.jsonl_path, std::ios::app);
    if (!*jsonl_file_) {
      throw usage_error(fmt::format("cannot write --jsonl {}", req_.jsonl_path), "give a file in a writable directory, or - for stdout");
    }
  }

  // GPU readings where a sampler opens; without one, monitor goes on with
  // the loader's side and says why once.
  void open_gpu() {
    if (req_.gpu == "none") return;
    GpuOpenResult r = open_gpu_sampler(req_.gpu);
    if (!r.sampler) {
      if (!io_.quiet) io_.err << "gpufeed: note: no GPU metrics: " << r.unavailable << "\n";
      return;
    }
    gpu_sampler_ = std::move(r.sampler);
    // Room for the window at the interval, bounded whatever the settings.
    const auto per_window = static_cast<std::size_t>(req_.window_s / std::max(req_.interval_s, 0.001)) + 2;
    gpu_window_ = std::make_unique<GpuWindow>(gpu_sampler_->backend(), gpu_sampler_->devices(),
                                              GpuWindowSettings{req_.window_s, std::clamp<std::size_t>(per_window, 64, 4096)});
  }

  std::set<int> cgroup_members() const {
    std::set<int> out;
    // A cgroup that is gone (its unit stopped) has no members until it is back.
    if (auto text = proc_.read(cgroup_dir_ + "/cgroup.procs")) {
      std::istringstream in(*text);
      for (int pid = 0; in >> pid;) out.insert(pid);
    }
    return out;
  }

  // Follow mode: finds the matching processes nothing follows yet. Each
  // one under no followed process is a new rank's main process (with its
  // children as workers); one under a followed process is a worker of its rank.
  void rescan() {
    std::optional<std::set<int>> members;
    if (!cgroup_dir_.empty()) members = cgroup_members();
    std::vector<ProcEntry> table;
    std::set<int> matched;
    for (const PidStat& s : proc_.processes()) {
      table.push_back({s.pid, s.ppid});
      if (s.kernel_thread() || s.state == 'Z' || s.state == 'X') continue;
      if (!req_.comm.empty() && s.comm != req_.comm) continue;
      if (members && !members->count(s.pid)) continue;
      matched.insert(s.pid);
    }
    std::set<int> followed;
    for (const auto& entry : live_) followed.insert(entry.first);
    for (const NewProcess& n : new_job_processes(table, matched, followed, getpid())) {
      if (live_.count(n.pid)) continue;  // followed already, as the child of an earlier one
      if (auto up = live_.find(n.under); n.under && up != live_.end()) {
        follow(n.pid, up->second.rank, true, false);
        continue;
      }
      const int rank = free_rank(held_ranks_);
      held_ranks_.insert(rank);
      main_rank_[n.pid] = rank;
      main_pids_.push_back(n.pid);
      rank_count_ = std::max(rank_count_, rank + 1);
      follow(n.pid, rank, false, false);
      for (int child : proc_.children_of(n.pid)) follow(child, rank, true, false);
      if (!io_.quiet && announced_) {
        io_.err << fmt::format("gpufeed: following pid {} as rank {} ({})\n", n.pid, rank, match_text()) << std::flush;
      }
    }
  }

  std::string match_text() const {
    std::string m;
    if (!req_.comm.empty()) m = "command name " + req_.comm;
    if (!cgroup_dir_.empty()) m += (m.empty() ? "" : " in ") + std::string("cgroup ") + cgroup_dir_;
    return m;
  }

  int ranks() const { return following() ? std::max(1, rank_count_) : static_cast<int>(main_pids_.size()); }

  void sample_gpu(double t) {
    if (!gpu_sampler_) return;
    gpu_window_->add(gpu_sampler_->sample(t));
    for (const GpuDevice& d : gpu_window_->devices()) gpu_window_->add_buffered(gpu_sampler_->buffered_busy(d.index, t));
  }

  // The GPUs the job uses: the vendor's process list, else the ranks'
  // *_VISIBLE_DEVICES, else all of them.
  void find_job_gpus() {
    job_gpus_.clear();
    job_gpus_from_ = "GPU process list";
    for (const GpuDevice& d : gpu_window_->devices()) {
      for (const auto& p : gpu_sampler_->processes(d.index)) {
        if (live_.count(p.pid)) {
          job_gpus_.push_back(d.index);
          break;
        }
      }
    }
    if (!job_gpus_.empty()) return;
    std::set<int> visible;
    for (int pid : main_pids_) {
      if (auto v = visible_devices_in_environ(proc_.read(fmt::format("/proc/{}/environ", pid)).value_or(""))) {
        visible.insert(v->devices.begin(), v->devices.end());
        job_gpus_from_ = v->variable;
      }
    }
    job_gpus_.assign(visible.begin(), visible.end());
    if (job_gpus_.empty()) job_gpus_from_ = "all GPUs (the job's GPUs are not known)";
  }

  std::ostream* jsonl() {
    if (jsonl_file_) return jsonl_file_.get();
    return req_.jsonl_path == "-" ? &io_.out : nullptr;
  }

  double seconds(std::uint64_t ns) const { return ns > start_ns_ ? static_cast<double>(ns - start_ns_) / 1e9 : 0.0; }

  void follow(int pid, int rank, bool worker, bool born_now) {
    if (live_.count(pid)) return;
    const auto st = proc_.pid_stat(pid);
    // A worker whose fork is read after it exited: nothing to follow, and an
    // entry for it would outlive it in the kernel's process map.
    if (born_now && worker && (!st || st->state == 'Z' || st->state == 'X')) return;
    Live& l = live_[pid];
    l.rank = rank;
    l.worker = worker;
    l.base_ticks = born_now || !st ? 0 : st->utime + st->stime;
    window_.track(pid, st ? st->ppid : 0, rank, worker, st ? st->comm : "", now_s(), born_now);
    tracer_->add_process(pid, worker, rank);
    if (worker && born_now) totals_.worker_started(rank);
  }

  double now_s() const { return seconds(monotonic_ns()); }

  void gone(int pid, double t, std::optional<int> code) {
    auto it = live_.find(pid);
    if (it == live_.end()) return;
    window_.exited(pid, t, code);
    if (it->second.worker) totals_.worker_gone(pid);
    resolver_.forget(pid);
    live_.erase(it);
    if (auto m = main_rank_.find(pid); m != main_rank_.end()) {
      // Follow mode: the rank waits for the job's next start.
      held_ranks_.erase(m->second);
      main_pids_.erase(std::remove(main_pids_.begin(), main_pids_.end(), pid), main_pids_.end());
      if (!io_.quiet) io_.err << fmt::format("gpufeed: rank {} (pid {}) exited; watching for the next match\n", m->second, pid) << std::flush;
      main_rank_.erase(m);
    }
  }

  bool targets_gone(const MonitorOutcome& outcome) {
    for (int pid : main_pids_) {
      if (live_.count(pid) && !outcome.command_status && proc_.alive(pid)) return false;
    }
    return true;
  }

  void on_event(const TraceEvent& ev) {
    const double t = seconds(ev.start_ns);
    switch (ev.type) {
      case TraceEventType::SlowCall: {
        SlowCall c = resolver_.slow_call(ev, t);
        // A call reported after its process left: resolved, but its mount
        // table is not kept (nothing would ever drop it again).
        if (!live_.count(ev.tgid)) resolver_.forget(ev.tgid);
        totals_.add_slow_call(c);
        window_.add_slow_call(std::move(c));
        break;
      }
      case TraceEventType::Wait: {
        const WaitSpan w{t, static_cast<double>(ev.dur_ns) / 1e6, ev.tgid, ev.rank, ev.nr};
        totals_.add_wait(w);
        window_.add_wait(w);
        break;
      }
      case TraceEventType::Fork:
        follow(ev.other_pid, ev.rank, true, true);
        break;
      case TraceEventType::Exit:
        gone(ev.tgid, t, os::exit_code_of(ev.other_pid));
        break;
    }
  }

  void tick(double t) {
    WindowTick w;
    w.t_s = t;
    w.syscalls = tracer_->histograms();
    w.stat = proc_.stat();
    for (const char* res : {"cpu", "io", "memory"}) {
      if (auto v = proc_.pressure_total_us(res)) w.psi_total_us[res] = *v;
    }
    if (auto m = proc_.meminfo()) w.mem = *m;
    worker_states_.clear();
    const double tick_s = static_cast<double>(sysconf(_SC_CLK_TCK));
    const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    std::vector<int> dead;
    for (auto& [pid, l] : live_) {
      auto s = proc_.pid_stat(pid);
      if (!s || s->state == 'Z' || s->state == 'X') {
        dead.push_back(pid);
        continue;
      }
      w.processes[pid] = {s->utime + s->stime, s->state, s->rss_pages * page};
      if (!l.worker) continue;
      ++worker_states_[l.rank][s->state];
      const std::uint64_t ticks = s->utime + s->stime;
      totals_.worker_cpu(pid, l.rank, static_cast<double>(ticks - std::min(ticks, l.base_ticks)) / tick_s);
    }
    for (int pid : dead) gone(pid, t, std::nullopt);
    cumulative_ = w.syscalls;
    window_.add_tick(std::move(w));
    sample_gpu(t);
  }

  void publish(double t, bool evaluate) {
    const WindowHost host{ranks(), true, "", req_.slow_call_ms, usable_cpus_, cpus_};
    Evidence e = window_.evidence(host);
    if (gpu_window_) {
      if (evaluate) find_job_gpus();
      e.gpu = gpu_window_->evidence(t, job_gpus_, job_gpus_from_);
      e.gpu_measured = !e.gpu->samples.empty() || !e.gpu->buffered.empty();
    }
    if (evaluate) {
      for (const auto& c : log_.update(evaluate_rules(e, req_.thresholds), t)) {
        if (c.started) totals_.finding_started(c.id);
        report(c);
      }
    }
    const auto counters = tracer_->counters();
    MonitorView v;
    v.uptime_s = t;
    v.window_s = e.window_s;
    v.ranks = ranks();
    v.window = &e;
    v.cumulative = &cumulative_;
    v.active = &log_.active();
    v.totals = &totals_;
    v.worker_states = worker_states_;
    v.gpu = gpu_window_.get();
    v.job_gpus = job_gpus_;
    v.batch_size = req_.batch_size;
    v.events_dropped = counters.events_dropped + counters.starts_dropped + window_.events_dropped();
    if (server_) server_->publish(prom::exposition(monitor_families(v, labels_)));
    if (std::ostream* out = jsonl()) *out << monitor_record(v, labels_).dump() << "\n" << std::flush;
  }

  void report(const FindingChange& c) {
    if (!io_.quiet) io_.err << "gpufeed: " << finding_line(c) << "\n" << std::flush;
    if (std::ostream* out = jsonl()) *out << finding_record(c, labels_).dump() << "\n" << std::flush;
  }

  // Says what is watched once tracing runs: a script can wait for this line.
  void announce() {
    announced_ = true;
    if (io_.quiet) return;
    // A cgroup that is not there may be a unit not started yet, or a typo: say so.
    if (!cgroup_dir_.empty() && !proc_.read(cgroup_dir_ + "/cgroup.procs")) {
      io_.err << fmt::format("gpufeed: note: cgroup {} does not exist (yet): waiting for it; check the path if the job "
                             "runs (e.g. systemctl status UNIT shows its CGroup)\n", cgroup_dir_);
    }
    std::string pids;
    for (int p : main_pids_) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
    if (following()) {
      io_.err << fmt::format("gpufeed: monitoring every process with {} (now: {}) and its workers every {:g} s "
                             "(window {:g} s){}; Ctrl-C stops\n",
                             match_text(), pids.empty() ? "none yet" : "pid " + pids, req_.interval_s, req_.window_s,
                             server_ ? "; metrics at " + server_->url() : "")
              << std::flush;
      return;
    }
    io_.err << fmt::format("gpufeed: monitoring pid{} {} and {} every {:g} s (window {:g} s){}; Ctrl-C stops\n",
                           main_pids_.size() > 1 ? "s" : "", pids, main_pids_.size() > 1 ? "their workers" : "its workers",
                           req_.interval_s, req_.window_s, server_ ? "; metrics at " + server_->url() : "")
            << std::flush;
  }

  const MonitorRequest& req_;
  MonitorIo& io_;
  ProcReader proc_;
  PathResolver resolver_;
  EvidenceWindow window_;
  FindingLog log_;
  MonitorTotals totals_;
  MonitorLabels labels_;
  std::unique_ptr<MetricsServer> server_;
  std::unique_ptr<std::ofstream> jsonl_file_;
  std::unique_ptr<BpfTracer> tracer_;
  std::unique_ptr<GpuSampler> gpu_sampler_;
  std::unique_ptr<GpuWindow> gpu_window_;
  std::vector<int> job_gpus_;
  std::string job_gpus_from_;
  std::uint64_t start_ns_ = 0;
  std::vector<int> main_pids_;
  // Follow mode: the live main processes' ranks, and how many ranks have been used.
  std::map<int, int> main_rank_;
  std::set<int> held_ranks_;
  int rank_count_ = 0;
  std::string cgroup_dir_;
  double next_scan_s_ = 1;
  bool announced_ = false;
  std::map<int, Live> live_;
  std::map<int, std::map<char, int>> worker_states_;
  std::vector<SyscallStat> cumulative_;
  CpuList cpus_;
  int usable_cpus_ = 0;
};

}  // namespace

MonitorOutcome run_monitor_session(const MonitorRequest& req, MonitorIo& io) { return Monitor(req, io).run(); }

}  // namespace gpufeed
