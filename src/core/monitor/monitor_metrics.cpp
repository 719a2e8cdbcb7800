#include "gpufeed/monitor/monitor_metrics.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "gpufeed/diagnose/syscalls.hpp"

namespace gpufeed {
namespace {

using prom::Family;
using prom::Labels;
using prom::Type;

Labels with(const MonitorLabels& base, Labels extra = {}) {
  Labels l{{"job", base.job}, {"node", base.node}};
  l.insert(l.end(), extra.begin(), extra.end());
  return l;
}

Family family(std::string name, std::string help, Type type) {
  Family f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

std::string mount_of(const SlowCall& c) { return c.mount_point.empty() ? "?" : c.mount_point; }

std::string state_name(char s) {
  switch (s) {
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'D': return "disk";
    case 'Z': return "zombie";
    case 'T': case 't': return "stopped";
    default: return "other";
  }
}

// The kernel's log2 buckets (bucket k: [2^k, 2^(k+1)) ns) as a cumulative
// Prometheus histogram with bounds 2^(k+1) ns, from 1 us to about 17 s.
prom::HistogramSample kernel_histogram(const LatencyHistogram& h, Labels labels) {
  prom::HistogramSample out;
  out.labels = std::move(labels);
  std::uint64_t running = 0;
  for (int k = 0; k < kHistogramSlots; ++k) {
    running += h.slots[static_cast<std::size_t>(k)];
    if (k + 1 < 10 || k + 1 > 34) continue;
    out.bounds.push_back(std::ldexp(1.0, k + 1) / 1e9);
    out.buckets.push_back(running);
  }
  out.count = h.count;
  out.sum = static_cast<double>(h.total_ns) / 1e9;
  return out;
}

std::optional<double> quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::floor(q * static_cast<double>(v.size() - 1) + 0.5));
  return v[std::min(i, v.size() - 1)];
}

// Per mount and call class: the window's slow calls' durations (ms).
std::map<std::pair<std::string, std::string>, std::vector<double>> slow_by_mount(const Evidence& e) {
  std::map<std::pair<std::string, std::string>, std::vector<double>> out;
  for (const auto& c : e.slow_calls) {
    if (c.kind != CallKind::Path && c.kind != CallKind::File) continue;
    out[{mount_of(c), call_class(c.nr)}].push_back(c.dur_ms);
  }
  return out;
}

}  // namespace

const std::vector<double>& slow_call_bounds() {
  static const std::vector<double> b{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  return b;
}

std::string call_class(int nr) {
  if (sys::is_stat(nr)) return "stat";
  if (sys::is_open(nr)) return "open";
  if (sys::is_read(nr)) return "read";
  return "other";
}

void BucketCounts::add(double seconds, const std::vector<double>& bounds) {
  if (buckets.size() != bounds.size()) buckets.assign(bounds.size(), 0);
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (seconds <= bounds[i]) ++buckets[i];
  }
  sum_s += seconds;
  ++count;
}

void MonitorTotals::add_wait(const WaitSpan& w) {
  loop_wait_s_[w.rank] += w.dur_ms / 1e3;
  ++loop_waits_[w.rank];
}

void MonitorTotals::add_slow_call(const SlowCall& c) {
  if (c.kind != CallKind::Path && c.kind != CallKind::File) return;
  slow_[{mount_of(c), call_class(c.nr)}].add(c.dur_ms / 1e3, slow_call_bounds());
}

void MonitorTotals::worker_cpu(int pid, int rank, double cpu_s) {
  auto& [r, s] = live_cpu_[pid];
  r = rank;
  s = std::max(s, cpu_s);
}

void MonitorTotals::worker_gone(int pid) {
  auto it = live_cpu_.find(pid);
  if (it == live_cpu_.end()) return;
  done_cpu_s_[it->second.first] += it->second.second;
  live_cpu_.erase(it);
}

std::map<int, double> MonitorTotals::worker_cpu_s() const {
  std::map<int, double> out = done_cpu_s_;
  for (const auto& [pid, rc] : live_cpu_) out[rc.first] += rc.second;
  return out;
}

std::map<int, double> data_wait_by_rank(const Evidence& e) {
  std::map<int, double> first, waited;
  for (const auto& w : e.waits) {
    auto [it, inserted] = first.try_emplace(w.rank, w.t_s);
    if (!inserted) it->second = std::min(it->second, w.t_s);
    waited[w.rank] += w.dur_ms / 1e3;
  }
  std::map<int, double> out;
  for (int r = 0; r < std::max(1, e.ranks); ++r) {
    if (!first.count(r)) {
      out[r] = 0.0;  // no wait in the window: fed, or not started
      continue;
    }
    const double active = std::max(e.window_s - first[r], e.window_s * 0.05);
    out[r] = active > 0 ? std::clamp(waited[r] / active, 0.0, 1.0) : 0.0;
  }
  return out;
}

std::vector<Family> monitor_families(const MonitorView& v, const MonitorLabels& labels) {
  static const Evidence empty;
  const Evidence& e = v.window ? *v.window : empty;
  const LoaderFigures lf = loader_figures(e);
  std::vector<Family> out;

  Family wait = family("gpufeed_loop_data_wait_ratio",
                       "Share of the training loop's time spent waiting for a batch, over the window", Type::Gauge);
  for (const auto& [rank, r] : data_wait_by_rank(e)) wait.samples.push_back({with(labels, {{"rank", std::to_string(rank)}}), r});
  out.push_back(std::move(wait));

  if (v.totals) {
    Family ws = family("gpufeed_loop_data_wait_seconds_total", "Seconds the training loop waited for data", Type::Counter);
    Family wn = family("gpufeed_loop_data_waits_total", "Waits for data by the training loop", Type::Counter);
    for (int r = 0; r < std::max(1, v.ranks); ++r) {
      const auto rank = std::to_string(r);
      const auto s = v.totals->loop_wait_s().find(r);
      const auto n = v.totals->loop_waits().find(r);
      ws.samples.push_back({with(labels, {{"rank", rank}}), s == v.totals->loop_wait_s().end() ? 0.0 : s->second});
      wn.samples.push_back({with(labels, {{"rank", rank}}),
                            n == v.totals->loop_waits().end() ? 0.0 : static_cast<double>(n->second)});
    }
    out.push_back(std::move(ws));
    out.push_back(std::move(wn));
  }

  const LoopStep step = loop_step(e);
  if (step.median_ms && step.span_s > 0 && step.loops > 0) {
    Family bps = family("gpufeed_loop_batches_per_second",
                        "Batches a training loop takes per second, from its waits (per rank, mean of ranks), over the window",
                        Type::Gauge);
    bps.samples.push_back({with(labels), static_cast<double>(step.steps) / step.loops / step.span_s});
    out.push_back(std::move(bps));
    Family st = family("gpufeed_loop_step_seconds", "The loop's step between waits (median), over the window", Type::Gauge);
    st.samples.push_back({with(labels), *step.median_ms / 1e3});
    out.push_back(std::move(st));
  }

  Family workers = family("gpufeed_workers", "Live DataLoader workers by process state, now", Type::Gauge);
  for (int r = 0; r < std::max(1, v.ranks); ++r) {
    auto it = v.worker_states.find(r);
    std::map<std::string, int> by_state{{"running", 0}, {"sleeping", 0}, {"disk", 0}, {"other", 0}};
    if (it != v.worker_states.end()) {
      for (const auto& [st, k] : it->second) {
        const std::string name = state_name(st);
        by_state[by_state.count(name) ? name : "other"] += k;
      }
    }
    for (const auto& [s, n] : by_state) {
      workers.samples.push_back({with(labels, {{"rank", std::to_string(r)}, {"state", s}}), static_cast<double>(n)});
    }
  }
  out.push_back(std::move(workers));
  if (lf.worker_busy_fraction) {
    Family busy = family("gpufeed_worker_busy_ratio", "Share of the workers' time not waiting for work, over the window", Type::Gauge);
    busy.samples.push_back({with(labels), *lf.worker_busy_fraction});
    out.push_back(std::move(busy));
  }
  if (lf.worker_io_share) {
    Family io = family("gpufeed_worker_io_ratio", "Share of the workers' busy time in file and path calls, over the window", Type::Gauge);
    io.samples.push_back({with(labels), *lf.worker_io_share});
    out.push_back(std::move(io));
  }
  if (v.totals) {
    Family cpu = family("gpufeed_worker_cpu_seconds_total", "CPU seconds used by DataLoader workers", Type::Counter);
    Family started = family("gpufeed_workers_started_total", "DataLoader workers seen starting", Type::Counter);
    const auto cpu_s = v.totals->worker_cpu_s();
    for (int r = 0; r < std::max(1, v.ranks); ++r) {
      const auto rank = std::to_string(r);
      auto c = cpu_s.find(r);
      auto s = v.totals->workers_started().find(r);
      cpu.samples.push_back({with(labels, {{"rank", rank}}), c == cpu_s.end() ? 0.0 : c->second});
      started.samples.push_back({with(labels, {{"rank", rank}}),
                                 s == v.totals->workers_started().end() ? 0.0 : static_cast<double>(s->second)});
    }
    out.push_back(std::move(cpu));
    out.push_back(std::move(started));

    Family slow = family("gpufeed_slow_call_duration_seconds",
                         fmt::format("File and path calls slower than the slow-call threshold, by mount and call"),
                         Type::Histogram);
    for (const auto& [key, b] : v.totals->slow_calls()) {
      prom::HistogramSample h;
      h.labels = with(labels, {{"mount", key.first}, {"call", key.second}});
      h.bounds = slow_call_bounds();
      h.buckets = b.buckets;
      h.sum = b.sum_s;
      h.count = b.count;
      slow.histograms.push_back(std::move(h));
    }
    out.push_back(std::move(slow));
  }

  Family p50 = family("gpufeed_mount_call_p50_seconds", "Median slow-call latency by mount and call, over the window", Type::Gauge);
  Family p99 = family("gpufeed_mount_call_p99_seconds", "99th-percentile slow-call latency by mount and call, over the window",
                      Type::Gauge);
  for (const auto& [key, ms] : slow_by_mount(e)) {
    const Labels l = with(labels, {{"mount", key.first}, {"call", key.second}});
    if (auto q = quantile(ms, 0.5)) p50.samples.push_back({l, *q / 1e3});
    if (auto q = quantile(ms, 0.99)) p99.samples.push_back({l, *q / 1e3});
  }
  out.push_back(std::move(p50));
  out.push_back(std::move(p99));

  if (v.cumulative) {
    Family calls = family("gpufeed_syscall_duration_seconds",
                          "Latency of the traced processes' file, path and wait calls, aggregated in the kernel", Type::Histogram);
    for (const auto& s : *v.cumulative) {
      if (s.hist.count == 0) continue;
      if (s.role != Role::Loop && s.role != Role::Worker) continue;
      const bool wanted = s.kind == CallKind::Path || s.kind == CallKind::File || s.kind == CallKind::FdStat ||
                          (s.role == Role::Loop && sys::is_wait(s.nr));
      if (!wanted) continue;
      calls.histograms.push_back(kernel_histogram(s.hist, with(labels, {{"role", role_name(s.role)},
                                                                          {"call", call_label(s.nr, s.kind)}})));
    }
    out.push_back(std::move(calls));
  }

  const HostActivity& h = e.host;
  Family busy = family("gpufeed_node_cpu_busy_ratio", "Busy share of the job's CPUs, over the window", Type::Gauge);
  busy.samples.push_back({with(labels), h.cpu_busy_pct / 100});
  out.push_back(std::move(busy));
  Family iow = family("gpufeed_node_cpu_iowait_ratio", "Iowait share of the job's CPUs, over the window", Type::Gauge);
  iow.samples.push_back({with(labels), h.cpu_iowait_pct / 100});
  out.push_back(std::move(iow));
  Family psi = family("gpufeed_node_pressure_some_ratio",
                      "Pressure stall information: share of the window with some task stalled, by resource", Type::Gauge);
  for (const auto& [res, val] : {std::pair{"cpu", h.psi_cpu_some_pct}, {"io", h.psi_io_some_pct}, {"memory", h.psi_memory_some_pct}}) {
    if (val) psi.samples.push_back({with(labels, {{"resource", res}}), *val / 100});
  }
  out.push_back(std::move(psi));
  Family ctx = family("gpufeed_node_context_switches_per_second", "Context switches per second on the node, over the window",
                      Type::Gauge);
  ctx.samples.push_back({with(labels), h.ctx_switches_per_s});
  out.push_back(std::move(ctx));
  Family mem = family("gpufeed_node_memory_available_bytes", "MemAvailable, now", Type::Gauge);
  mem.samples.push_back({with(labels), static_cast<double>(h.mem_available_bytes)});
  out.push_back(std::move(mem));

  if (auto spj = samples_per_joule(v)) {
    Family f = family("gpufeed_loop_samples_per_joule",
                      "Samples the training loops take per joule of their GPUs' energy (all ranks' samples per second "
                      "over the job's GPU power), over the window",
                      Type::Gauge);
    f.samples.push_back({with(labels), *spj});
    out.push_back(std::move(f));
  }
  if (v.gpu) {
    const auto act = v.gpu->activity(v.uptime_s);
    Family busy_g = family("gpufeed_gpu_busy_ratio",
                           "Mean GPU busy share (the vendor's utilization), over the window", Type::Gauge);
    Family gap = family("gpufeed_gpu_idle_gap_seconds", "Mean idle gap between busy stretches, over the window",
                        Type::Gauge);
    Family power = family("gpufeed_gpu_power_watts", "Mean GPU power draw, over the window", Type::Gauge);
    Family energy = family("gpufeed_gpu_energy_joules_total", "GPU energy since gpufeed monitor attached",
                           Type::Counter);
    for (const GpuDevice& d : v.gpu->devices()) {
      const Labels l = with(labels, {{"gpu", std::to_string(d.index)}, {"bus_id", d.bus_id}});
      const auto a = act.find(d.index);
      if (a != act.end()) {
        const GpuActivity& ga = a->second.activity;
        if (ga.busy_fraction) busy_g.samples.push_back({l, *ga.busy_fraction});
        if (ga.mean_idle_gap_s) gap.samples.push_back({l, *ga.mean_idle_gap_s});
        if (ga.mean_power_w) power.samples.push_back({l, *ga.mean_power_w});
      }
      const auto t = v.gpu->totals().find(d.index);
      if (t != v.gpu->totals().end() && t->second.last_power_w) energy.samples.push_back({l, t->second.energy_j});
    }
    for (Family* f : {&busy_g, &gap, &power, &energy}) out.push_back(std::move(*f));
  }

  Family active = family("gpufeed_finding_active",
                         "1 while a diagnose finding holds on the window (docs/findings.md has each id's advice)", Type::Gauge);
  for (const auto& id : finding_ids()) {
    const bool on = v.active && v.active->count(id);
    active.samples.push_back({with(labels, {{"finding", id}}), on ? 1.0 : 0.0});
  }
  out.push_back(std::move(active));
  if (v.totals) {
    Family starts = family("gpufeed_finding_starts_total", "Times a finding started holding", Type::Counter);
    for (const auto& [id, n] : v.totals->finding_starts()) {
      starts.samples.push_back({with(labels, {{"finding", id}}), static_cast<double>(n)});
    }
    out.push_back(std::move(starts));
  }

  Family window = family("gpufeed_monitor_window_seconds", "The span the window gauges cover", Type::Gauge);
  window.samples.push_back({with(labels), v.window_s});
  out.push_back(std::move(window));
  Family up = family("gpufeed_monitor_uptime_seconds", "Seconds since gpufeed monitor attached", Type::Gauge);
  up.samples.push_back({with(labels), v.uptime_s});
  out.push_back(std::move(up));
  Family dropped = family("gpufeed_monitor_events_dropped_total",
                          "Trace events lost (kernel ring full, or the window's event cap)", Type::Counter);
  dropped.samples.push_back({with(labels), static_cast<double>(v.events_dropped)});
  out.push_back(std::move(dropped));
  return out;
}

std::optional<double> samples_per_joule(const MonitorView& v) {
  if (v.batch_size <= 0 || !v.gpu || !v.window) return std::nullopt;
  const LoopStep step = loop_step(*v.window);
  if (!step.median_ms || step.span_s <= 0 || step.steps <= 0) return std::nullopt;
  const double samples_per_s = static_cast<double>(step.steps) / step.span_s * v.batch_size;
  double watts = 0;
  bool any = false;
  for (const auto& [index, a] : v.gpu->activity(v.uptime_s)) {
    if (!v.job_gpus.empty() && std::find(v.job_gpus.begin(), v.job_gpus.end(), index) == v.job_gpus.end()) continue;
    if (!a.activity.mean_power_w) continue;
    watts += *a.activity.mean_power_w;
    any = true;
  }
  if (!any || watts <= 0) return std::nullopt;
  return samples_per_s / watts;
}

Json monitor_record(const MonitorView& v, const MonitorLabels& labels) {
  static const Evidence empty;
  const Evidence& e = v.window ? *v.window : empty;
  const LoaderFigures lf = loader_figures(e);
  Json j = Json::object();
  j["type"] = "sample";
  j["job"] = labels.job;
  j["node"] = labels.node;
  j["uptime_s"] = v.uptime_s;
  j["window_s"] = v.window_s;
  Json ranks = Json::array();
  for (const auto& [rank, r] : data_wait_by_rank(e)) {
    Json x = {{"rank", rank}, {"data_wait_ratio", r}};
    int live = 0;
    if (auto it = v.worker_states.find(rank); it != v.worker_states.end()) {
      for (const auto& [st, n] : it->second) {
        x["workers_by_state"][state_name(st)] = n;
        live += n;
      }
    }
    x["workers"] = live;
    if (v.totals) {
      const auto cpu = v.totals->worker_cpu_s();
      if (auto it = cpu.find(rank); it != cpu.end()) x["worker_cpu_s_total"] = it->second;
    }
    ranks.push_back(std::move(x));
  }
  j["ranks"] = std::move(ranks);
  const LoopStep step = loop_step(e);
  if (step.median_ms && step.span_s > 0 && step.loops > 0) {
    j["batches_per_s"] = static_cast<double>(step.steps) / step.loops / step.span_s;
    j["step_ms"] = *step.median_ms;
  } else {
    j["batches_per_s"] = nullptr;
  }
  if (lf.worker_busy_fraction) j["worker_busy_ratio"] = *lf.worker_busy_fraction;
  Json mounts = Json::array();
  for (const auto& [key, ms] : slow_by_mount(e)) {
    mounts.push_back({{"mount", key.first}, {"call", key.second}, {"slow_calls", ms.size()},
                      {"p50_ms", quantile(ms, 0.5).value_or(0)}, {"p99_ms", quantile(ms, 0.99).value_or(0)}});
  }
  j["slow_calls"] = std::move(mounts);
  const HostActivity& h = e.host;
  j["host"] = {{"cpu_busy_pct", h.cpu_busy_pct}, {"cpu_iowait_pct", h.cpu_iowait_pct},
               {"ctx_switches_per_s", h.ctx_switches_per_s}, {"mem_available_bytes", h.mem_available_bytes}};
  if (h.psi_cpu_some_pct) j["host"]["psi_cpu_some_pct"] = *h.psi_cpu_some_pct;
  if (h.psi_io_some_pct) j["host"]["psi_io_some_pct"] = *h.psi_io_some_pct;
  Json act = Json::array();
  if (v.active) {
    for (const auto& [id, a] : *v.active) act.push_back(id);
  }
  j["findings_active"] = std::move(act);
  if (v.gpu) {
    Json gpus = Json::array();
    const auto activity = v.gpu->activity(v.uptime_s);
    for (const GpuDevice& d : v.gpu->devices()) {
      Json g = {{"gpu", d.index}, {"bus_id", d.bus_id}, {"busy_ratio", nullptr}, {"mean_idle_gap_s", nullptr},
                {"power_w", nullptr}, {"energy_j_total", nullptr}};
      if (auto a = activity.find(d.index); a != activity.end()) {
        const GpuActivity& ga = a->second.activity;
        if (ga.busy_fraction) g["busy_ratio"] = *ga.busy_fraction;
        if (ga.mean_idle_gap_s) g["mean_idle_gap_s"] = *ga.mean_idle_gap_s;
        if (ga.mean_power_w) g["power_w"] = *ga.mean_power_w;
      }
      if (auto t = v.gpu->totals().find(d.index); t != v.gpu->totals().end() && t->second.last_power_w) {
        g["energy_j_total"] = t->second.energy_j;
      }
      gpus.push_back(std::move(g));
    }
    j["gpus"] = std::move(gpus);
    if (auto spj = samples_per_joule(v)) j["samples_per_joule"] = *spj;
  }
  j["events_dropped"] = v.events_dropped;
  return j;
}

Json finding_record(const FindingChange& c, const MonitorLabels& labels) {
  Json j = {{"type", "finding"}, {"event", c.started ? "started" : "stopped"}, {"id", c.id},
            {"severity", severity_name(c.severity)}, {"title", c.title}, {"uptime_s", c.t_s},
            {"job", labels.job}, {"node", labels.node}};
  if (c.started) {
    j["advice"] = c.advice;
    j["figures"] = c.figures;
  } else {
    j["active_s"] = c.active_s;
  }
  return j;
}

std::string finding_line(const FindingChange& c) {
  if (c.started) return fmt::format("[{:.0f} s] finding started: {} ({}): {}", c.t_s, c.id, severity_name(c.severity), c.title);
  return fmt::format("[{:.0f} s] finding stopped: {} (held {:.0f} s)", c.t_s, c.id, c.active_s);
}

}  // namespace gpufeed
