#include "gpufeed/diagnose/report.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "gpufeed/diagnose/gpu_figures.hpp"
#include "gpufeed/diagnose/syscalls.hpp"
#include "gpufeed/units.hpp"

namespace gpufeed {
namespace {

Json opt(std::optional<double> v) { return v ? Json(*v) : Json(nullptr); }
std::string pct(double fraction) { return fmt::format("{:.0f}%", fraction * 100); }
Json scaled(std::optional<double> v, double k) { return v ? Json(*v * k) : Json(nullptr); }
std::optional<double> in_ms(std::optional<double> ns) {
  if (!ns) return std::nullopt;
  return *ns / 1e6;
}
std::string ms_text(std::optional<double> v) { return v ? fmt::format("{:.2f}", *v) : "-"; }

// Syscall rows: every (role, call) with its histogram, most total time first.
std::vector<const SyscallStat*> by_total_time(const Evidence& e) {
  std::vector<const SyscallStat*> rows;
  for (const auto& s : e.syscalls) rows.push_back(&s);
  std::sort(rows.begin(), rows.end(),
            [](const SyscallStat* a, const SyscallStat* b) { return a->hist.total_ns > b->hist.total_ns; });
  return rows;
}

Json histogram_json(const LatencyHistogram& h) {
  Json slots = Json::array();
  for (int k = 0; k < kHistogramSlots; ++k) {
    if (h.slots[static_cast<size_t>(k)] == 0) continue;
    slots.push_back({{"log2_ns", k}, {"count", h.slots[static_cast<size_t>(k)]}});
  }
  return slots;
}

Json per_cpu_json(const HostActivity& h) {
  Json out = Json::array();
  for (const auto& c : h.per_cpu) out.push_back({{"cpu", c.cpu}, {"busy_pct", c.busy_pct}, {"iowait_pct", c.iowait_pct}});
  return out;
}

Json gpu_json(const Evidence& e) {
  if (!e.gpu) return nullptr;
  const GpuEvidence& g = *e.gpu;
  Json devices = Json::array();
  const auto gpus = job_gpus(e);
  for (const auto& j : gpus) {
    const auto& a = j.activity;
    // The job's throughput shared evenly by its GPUs.
    std::optional<double> per_joule;
    if (g.job_samples_per_s) per_joule = samples_per_joule(a, *g.job_samples_per_s / static_cast<double>(gpus.size()));
    Json gaps = Json::array();
    for (const auto& b : a.gap_histogram) gaps.push_back({{"from_ms", b.from_ms}, {"to_ms", b.to_ms}, {"count", b.count}});
    devices.push_back({{"index", j.device.index},
                       {"vendor", j.device.vendor},
                       {"name", j.device.name},
                       {"bus_id", j.device.bus_id},
                       {"memory_total_bytes", j.device.memory_total_bytes ? Json(*j.device.memory_total_bytes) : Json(nullptr)},
                       {"samples", a.samples},
                       {"fine_grained", j.fine_grained},
                       {"busy_fraction", opt(a.busy_fraction)},
                       {"idle_gaps", a.idle_gaps_s.size()},
                       {"mean_idle_gap_ms", scaled(a.mean_idle_gap_s, 1e3)},
                       {"idle_gap_histogram", gaps},
                       {"period_ms", scaled(a.period_s, 1e3)},
                       {"period_strength", opt(a.period_strength)},
                       {"energy_j", opt(a.energy_j)},
                       {"mean_power_w", opt(a.mean_power_w)},
                       {"samples_per_joule", opt(per_joule)}});
  }
  return {{"backend", g.backend},       {"source", g.source},
          {"sample_hz", g.sample_hz},   {"busy_meaning", busy_meaning(g.backend)},
          {"job_devices_from", g.job_devices_from},
          {"devices", devices}};
}

// The step as seen between the loop's data waits (evidence.hpp: loop_step).
Json loop_step_json(const Evidence& e) {
  const LoopStep st = loop_step(e);
  return {{"median_ms", opt(st.median_ms)},
          {"spread_ms", st.median_ms ? Json(st.spread_ms) : Json(nullptr)},
          {"p10_ms", st.median_ms ? Json(st.p10_ms) : Json(nullptr)},
          {"p90_ms", st.median_ms ? Json(st.p90_ms) : Json(nullptr)},
          {"cycles", st.cycles},
          {"steps", st.median_ms ? Json(st.steps) : Json(nullptr)},
          {"ready_fraction", st.median_ms ? Json(st.ready_fraction) : Json(nullptr)},
          {"loops", st.loops},
          {"span_s", st.span_s},
          {"unavailable", st.median_ms ? Json(nullptr) : Json(st.unavailable)}};
}

Json evidence_json(const DiagnosisReport& r) {
  const Evidence& e = r.evidence;
  const LoaderFigures f = loader_figures(e);
  Json syscalls = Json::array();
  for (const auto* s : by_total_time(e)) {
    syscalls.push_back({{"role", role_name(s->role)},
                        {"syscall", sys::name(s->nr)},
                        {"nr", s->nr},
                        {"kind", call_kind_name(s->kind)},
                        {"count", s->hist.count},
                        {"total_ms", static_cast<double>(s->hist.total_ns) / 1e6},
                        {"bytes", s->hist.bytes},
                        {"p50_ms", opt(in_ms(s->hist.quantile_ns(0.5)))},
                        {"p99_ms", opt(in_ms(s->hist.quantile_ns(0.99)))},
                        {"histogram", histogram_json(s->hist)}});
  }
  Json groups = Json::array();
  for (const auto& g : slow_groups(e)) {
    groups.push_back({{"mount_point", g.mount_point}, {"fs_type", g.fs_type}, {"prefix", g.prefix},
                      {"calls", g.calls}, {"stat_calls", g.stat_calls}, {"open_calls", g.open_calls},
                      {"read_calls", g.read_calls}, {"total_s", g.total_s}, {"stat_p50_ms", opt(g.stat_p50_ms)},
                      {"stat_p99_ms", opt(g.stat_p99_ms)}, {"open_p50_ms", opt(g.open_p50_ms)},
                      {"open_p99_ms", opt(g.open_p99_ms)}, {"read_p50_ms", opt(g.read_p50_ms)}});
  }
  Json processes = Json::array();
  for (const auto& p : e.processes) {
    Json states = Json::object();
    for (const auto& [st, n] : p.states) states[std::string(1, st)] = n;
    const double alive = std::max(1e-9, p.last_seen_s - p.first_seen_s);
    processes.push_back({{"pid", p.pid}, {"ppid", p.ppid}, {"rank", p.rank}, {"role", p.worker ? "worker" : "loop"},
                         {"comm", p.comm}, {"first_seen_s", p.first_seen_s}, {"last_seen_s", p.last_seen_s},
                         {"exited", p.exited}, {"exit_code", p.exit_code ? Json(*p.exit_code) : Json(nullptr)},
                         {"cpu_s", p.cpu_s}, {"cpu_pct", 100.0 * p.cpu_s / alive}, {"states", states},
                         {"max_rss_bytes", p.max_rss_bytes}});
  }
  const auto stat = path_latency(e, true), open = path_latency(e, false);
  const auto& h = e.host;
  return {
      {"window_s", e.window_s},
      {"ebpf", e.ebpf},
      {"slow_threshold_ms", e.slow_threshold_ms},
      {"events_dropped", e.events_dropped},
      {"data_wait_fraction", opt(f.data_wait_fraction)},
      {"data_wait_source", f.data_wait_sampled ? "proc-sampling" : (f.data_wait_fraction ? "ebpf" : "none")},
      {"gpu_measured", e.gpu_measured},
      {"gpu", gpu_json(e)},
      {"workers",
       {{"distinct", f.workers_total}, {"max_per_rank", f.max_workers_per_rank}, {"live_at_end", f.live_workers},
        {"wall_s", f.worker_wall_s}, {"wait_s", f.worker_wait_s}, {"io_s", f.worker_io_s}, {"cpu_s", f.worker_cpu_s},
        {"busy_fraction", opt(f.worker_busy_fraction)}, {"io_share", opt(f.worker_io_share)},
        {"cpu_share", opt(f.worker_cpu_share)}, {"d_state_share", f.worker_d_state_share},
        {"files_opened", f.worker_opens}, {"bytes_read", f.worker_read_bytes}}},
      {"path_calls",
       {{"stat", {{"calls", stat.calls}, {"p50_ms", opt(stat.p50_ms)}, {"p99_ms", opt(stat.p99_ms)}}},
        {"open", {{"calls", open.calls}, {"p50_ms", opt(open.p50_ms)}, {"p99_ms", opt(open.p99_ms)}}}}},
      {"slow_call_groups", groups},
      {"slow_calls_recorded", e.slow_calls.size()},
      {"wait_spans_recorded", e.waits.size()},
      {"loop_step", loop_step_json(e)},
      {"syscalls", syscalls},
      {"processes", processes},
      {"host",
       {{"usable_cpus", h.usable_cpus}, {"cpu_busy_pct", h.cpu_busy_pct}, {"cpu_iowait_pct", h.cpu_iowait_pct},
        {"ctx_switches_per_s", h.ctx_switches_per_s}, {"psi_cpu_some_pct", opt(h.psi_cpu_some_pct)},
        {"psi_io_some_pct", opt(h.psi_io_some_pct)}, {"psi_memory_some_pct", opt(h.psi_memory_some_pct)},
        {"per_cpu", per_cpu_json(h)},
        {"mem_available_bytes", h.mem_available_bytes}, {"page_cache_bytes", h.page_cache_bytes},
        {"samples", h.samples}, {"sample_hz", h.sample_hz}}}};
}

std::string severity_label(Severity s, const TextStyle& st) {
  switch (s) {
    case Severity::Critical: return st.bad("CRITICAL");
    case Severity::Warning: return st.warn("WARNING ");
    case Severity::Info: return st.dim("INFO    ");
  }
  return "";
}

}  // namespace

DiagnosisReport make_diagnosis(std::vector<DiagnosisTarget> targets, Evidence evidence,
                               const RuleThresholds& thresholds) {
  DiagnosisReport r;
  r.targets = std::move(targets);
  r.findings = evaluate_rules(evidence, thresholds);
  if (!evidence.ebpf) {
    r.notes.push_back("eBPF tracing not active (" + evidence.ebpf_unavailable +
                      "): figures are sampled from /proc and findings have lower confidence");
  }
  if (!evidence.gpu_measured) {
    r.notes.push_back("GPU activity not measured" +
                      (evidence.gpu_unavailable.empty() ? std::string() : " (" + evidence.gpu_unavailable + ")") +
                      ": the loop's data wait is the signal");
  }
  if (evidence.events_dropped > 0) {
    r.notes.push_back(fmt::format("{} trace events were dropped (ring buffer full): slow-call counts are lower bounds",
                                  evidence.events_dropped));
  }
  r.evidence = std::move(evidence);
  return r;
}

const Finding* top_cause(const DiagnosisReport& r) {
  const Finding* best = nullptr;
  for (const auto& f : r.findings) {
    if (f.id == "loop.starved") continue;
    if (!best || f.weight > best->weight) best = &f;
  }
  return best;
}

std::optional<Severity> worst_severity(const DiagnosisReport& r) {
  std::optional<Severity> worst;
  for (const auto& f : r.findings) {
    if (!worst || f.severity > *worst) worst = f.severity;
  }
  return worst;
}

Json to_json(const DiagnosisReport& r) {
  Json targets = Json::array();
  for (const auto& t : r.targets) targets.push_back({{"pid", t.pid}, {"rank", t.rank}, {"command", t.command}});
  Json findings = Json::array();
  for (const auto& f : r.findings) {
    findings.push_back({{"id", f.id}, {"severity", severity_name(f.severity)}, {"title", f.title},
                        {"evidence", f.evidence}, {"figures", f.figures}, {"advice", f.advice},
                        {"confidence", confidence_name(f.confidence)}});
  }
  const LoaderFigures fig = loader_figures(r.evidence);
  const Finding* cause = top_cause(r);
  Json summary = {{"data_wait_fraction", opt(fig.data_wait_fraction)},
                  {"healthy", r.findings.empty()},
                  {"top_cause", cause ? Json(cause->id) : Json(nullptr)},
                  {"fix", cause ? Json(cause->advice) : Json(nullptr)},
                  {"worst_severity", worst_severity(r) ? Json(severity_name(*worst_severity(r))) : Json(nullptr)}};
  return {{"targets", targets},
          {"launched", r.launched},
          {"command_exit_code", r.command_exit_code ? Json(*r.command_exit_code) : Json(nullptr)},
          {"end_reason", r.end_reason},
          {"summary", summary},
          {"findings", findings},
          {"evidence", evidence_json(r)},
          {"notes", r.notes}};
}

void render_text(const DiagnosisReport& r, const TextStyle& s, bool verbose, std::ostream& out) {
  const Evidence& e = r.evidence;
  const LoaderFigures f = loader_figures(e);
  std::string who;
  for (const auto& t : r.targets) {
    who += fmt::format("{}rank {} pid {}", who.empty() ? "" : ", ", t.rank, t.pid);
  }
  out << s.heading(fmt::format("gpufeed diagnose: {} for {:.1f} s ({}; {})", who, e.window_s,
                               e.ebpf ? "eBPF syscall tracing" : "/proc sampling only", r.end_reason))
      << "\n";
  if (!r.targets.empty() && !r.targets.front().command.empty()) out << s.dim("  " + r.targets.front().command) << "\n";

  out << "\n" << s.heading("Summary") << "\n";
  if (f.data_wait_fraction) {
    const double w = *f.data_wait_fraction;
    out << fmt::format("  Data wait: {} of the training loop's time{}{}\n",
                       w >= 0.3 ? s.bad(pct(w)) : (w >= 0.1 ? s.warn(pct(w)) : s.good(pct(w))),
                       f.data_wait_sampled ? " (sampled)" : "",
                       w >= 0.1 ? fmt::format(" -> up to {:.1f}x faster if fed", 1.0 / (1.0 - std::min(w, 0.99))) : "");
  } else {
    out << "  Data wait: not measured (no training-loop thread was seen)\n";
  }
  const LoopStep step = loop_step(e);
  if (step.median_ms) {
    out << fmt::format("  Loop step: {:.1f} ms between data waits (p10 {:.1f}, p90 {:.1f}; {} cycles{}) - "
                       "gpufeed tune --from takes it\n",
                       *step.median_ms, step.p10_ms, step.p90_ms, step.cycles,
                       step.ready_fraction >= 0.05
                           ? fmt::format("; {} of steps found their batch ready", pct(step.ready_fraction))
                           : "");
  }
  if (r.findings.empty()) {
    out << "  " << s.good("Healthy: no finding") << " - the loader keeps up with the loop.\n";
  } else if (const Finding* cause = top_cause(r)) {
    out << "  Top cause: " << cause->title << "\n";
    out << "  Fix:       " << cause->advice << "\n";
  } else {
    out << "  " << r.findings.front().title << "\n";
  }

  if (!r.findings.empty()) {
    out << "\n" << s.heading(fmt::format("Findings ({})", r.findings.size())) << "\n";
    for (const auto& x : r.findings) {
      out << "  " << severity_label(x.severity, s) << "  " << x.title << "  "
          << s.dim(fmt::format("[{}, {} confidence]", x.id, confidence_name(x.confidence))) << "\n";
      for (const auto& line : x.evidence) out << "      - " << line << "\n";
      out << "      fix: " << x.advice << "\n";
    }
  }

  out << "\n" << s.heading("Evidence") << "\n";
  const auto groups = slow_groups(e);
  if (!groups.empty()) {
    out << fmt::format("  Slow calls (over {:.0f} ms) by mount and directory\n", e.slow_threshold_ms);
    TextTable t({"mount", "type", "under", "calls", "stat p50", "stat p99", "open p50", "open p99", "read p50",
                 "time s"});
    for (size_t i = 0; i < groups.size() && (verbose || i < 8); ++i) {
      const auto& g = groups[i];
      t.add({g.mount_point, g.fs_type, g.prefix, std::to_string(g.calls), ms_text(g.stat_p50_ms),
             ms_text(g.stat_p99_ms), ms_text(g.open_p50_ms), ms_text(g.open_p99_ms), ms_text(g.read_p50_ms),
             fmt::format("{:.2f}", g.total_s)});
    }
    t.print(out, s, "    ");
  } else if (e.ebpf) {
    out << fmt::format("  No path or file call took over {:.0f} ms.\n", e.slow_threshold_ms);
  }

  if (e.ebpf) {
    out << "  Syscalls by total time (ms; latencies p50/p99)\n";
    TextTable t({"role", "call", "count", "total", "mean", "p50", "p99"});
    const auto rows = by_total_time(e);
    for (size_t i = 0; i < rows.size() && (verbose || i < 12); ++i) {
      const auto& h = rows[i]->hist;
      t.add({role_name(rows[i]->role), call_label(rows[i]->nr, rows[i]->kind), std::to_string(h.count),
             fmt::format("{:.1f}", static_cast<double>(h.total_ns) / 1e6), fmt::format("{:.3f}", h.mean_ns() / 1e6),
             ms_text(in_ms(h.quantile_ns(0.5))),
             ms_text(in_ms(h.quantile_ns(0.99)))});
    }
    t.print(out, s, "    ");
    // The latency histograms of the path calls workers make, like biolatency.
    for (bool stats : {true, false}) {
      LatencyHistogram h;
      for (const auto& st : e.syscalls) {
        if (st.kind == CallKind::Path && (stats ? sys::is_stat(st.nr) : sys::is_open(st.nr))) h.merge(st.hist);
      }
      if (h.count == 0) continue;
      out << fmt::format("  {} latency ({} calls)\n", stats ? "stat(path)" : "open", h.count);
      for (const auto& row : draw_histogram(h)) out << "    " << row << "\n";
    }
  }

  const auto gpus = job_gpus(e);
  if (!gpus.empty()) {
    out << fmt::format("  GPUs the job uses ({}, {}; {})\n", e.gpu->backend, e.gpu->source, e.gpu->job_devices_from);
    TextTable t({"GPU", "name", "busy", "idle gaps", "mean gap", "period", "energy"});
    for (const auto& j : gpus) {
      const auto& a = j.activity;
      t.add({j.device.bus_id.empty() ? std::to_string(j.device.index) : j.device.bus_id, j.device.name,
             a.busy_fraction ? pct(*a.busy_fraction) : "-", std::to_string(a.idle_gaps_s.size()),
             a.mean_idle_gap_s ? fmt::format("{:.0f} ms", *a.mean_idle_gap_s * 1e3) : "-",
             a.period_s ? fmt::format("{:.0f} ms", *a.period_s * 1e3) : "-",
             a.energy_j ? fmt::format("{:.0f} J", *a.energy_j) : "-"});
    }
    t.print(out, s, "    ");
    out << s.dim("    " + busy_meaning(e.gpu->backend)) << "\n";
  }
  out << "  Workers: " << f.workers_total << " seen, up to " << f.max_workers_per_rank << " per rank";
  if (f.worker_busy_fraction) {
    out << fmt::format("; busy {} (I/O {}, CPU {} of busy time)", pct(*f.worker_busy_fraction),
                       pct(f.worker_io_share.value_or(0)), pct(f.worker_cpu_share.value_or(0)));
  }
  out << "\n";
  if (verbose || e.processes.size() <= 12) {
    TextTable t({"pid", "rank", "role", "comm", "cpu %", "states", "max rss"});
    for (const auto& p : e.processes) {
      std::string states;
      for (const auto& [st, n] : p.states) states += fmt::format("{}{}:{}", states.empty() ? "" : " ", st, n);
      const double alive = std::max(1e-9, p.last_seen_s - p.first_seen_s);
      t.add({std::to_string(p.pid), std::to_string(p.rank), p.worker ? "worker" : "loop", p.comm,
             fmt::format("{:.0f}", 100.0 * p.cpu_s / alive), states.empty() ? "-" : states,
             format_bytes(p.max_rss_bytes)});
    }
    t.print(out, s, "    ");
  }
  const auto& h = e.host;
  auto psi = [](std::optional<double> v) { return v ? fmt::format("{:.1f}%", *v) : std::string("n/a"); };
  out << fmt::format("  Host: {} usable CPUs {:.0f}% busy, iowait {:.1f}%, {:.0f} context switches/s; PSI some: "
                     "cpu {}, io {}, memory {}; {} available, {} page cache ({} samples at {:.0f} Hz)\n",
                     h.usable_cpus, h.cpu_busy_pct, h.cpu_iowait_pct, h.ctx_switches_per_s, psi(h.psi_cpu_some_pct),
                     psi(h.psi_io_some_pct), psi(h.psi_memory_some_pct), format_bytes(h.mem_available_bytes),
                     format_bytes(h.page_cache_bytes), h.samples, h.sample_hz);
  if (!h.per_cpu.empty() && (verbose || h.per_cpu.size() <= 16)) {
    std::string cores;
    for (const auto& c : h.per_cpu) {
      cores += fmt::format("{}cpu{} {:.0f}%{}", cores.empty() ? "" : ", ", c.cpu, c.busy_pct,
                           c.iowait_pct >= 1 ? fmt::format(" (iowait {:.0f}%)", c.iowait_pct) : "");
    }
    out << "  Per CPU busy: " << cores << "\n";
  }
  for (const auto& n : r.notes) out << "  " << s.warn("note: ") << n << "\n";
}

Json chrome_trace(const DiagnosisReport& r) {
  const Evidence& e = r.evidence;
  Json events = Json::array();
  for (const auto& p : e.processes) {
    const std::string name =
        p.worker ? fmt::format("rank {} worker {}", p.rank, p.pid) : fmt::format("rank {} training loop {}", p.rank, p.pid);
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", p.pid}, {"args", {{"name", name}}}});
  }
  auto us = [](double s) { return s * 1e6; };
  for (const auto& c : e.slow_calls) {
    events.push_back({{"name", call_label(c.nr, c.kind)},
                      {"cat", "slow-call"},
                      {"ph", "X"},
                      {"ts", us(c.t_s)},
                      {"dur", c.dur_ms * 1e3},
                      {"pid", c.pid},
                      {"tid", c.tid},
                      {"args", {{"path", c.path}, {"mount", c.mount_point}, {"fs_type", c.fs_type}, {"ret", c.ret}}}});
  }
  for (const auto& w : e.waits) {
    events.push_back({{"name", "data wait"},
                      {"cat", "data-wait"},
                      {"ph", "X"},
                      {"ts", us(w.t_s)},
                      {"dur", w.dur_ms * 1e3},
                      {"pid", w.pid},
                      {"tid", w.pid},
                      {"args", {{"syscall", sys::name(w.nr)}}}});
  }
  for (const auto& smp : e.host.series) {
    events.push_back({{"name", "host CPU %"},
                      {"ph", "C"},
                      {"ts", us(smp.t_s)},
                      {"pid", 0},
                      {"args", {{"busy", smp.cpu_busy_pct}, {"iowait", smp.cpu_iowait_pct}}}});
  }
  if (e.gpu) {
    const bool fine = !e.gpu->buffered.empty();
    for (const auto& smp : fine ? e.gpu->buffered : e.gpu->samples) {
      if (!smp.busy_pct) continue;
      events.push_back({{"name", fmt::format("GPU {} busy %", smp.device)},
                        {"ph", "C"},
                        {"ts", us(smp.t_s)},
                        {"pid", 0},
                        {"args", {{"busy", *smp.busy_pct}}}});
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", {{"generator", "gpufeed diagnose"}}}};
}

}  // namespace gpufeed
