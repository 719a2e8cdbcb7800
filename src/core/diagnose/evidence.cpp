#include "gpufeed/diagnose/evidence.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "gpufeed/diagnose/mounts.hpp"
#include "gpufeed/diagnose/syscalls.hpp"
#include "gpufeed/stats.hpp"

namespace gpufeed {
namespace {

bool is_wait_call(int nr, CallKind kind) {
  return sys::is_wait(nr) || (sys::is_pipe_read(nr) && (kind == CallKind::Pipe || kind == CallKind::Socket));
}

bool is_io_call(int nr, CallKind kind) {
  if (kind == CallKind::Path || kind == CallKind::FdStat) return true;
  return kind == CallKind::File && (sys::is_read(nr) || nr == 3 /* close */ || nr == 217 /* getdents64 */);
}

std::optional<double> exact_quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - (q > 0 ? 1 : 0);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

std::string role_name(Role r) {
  switch (r) {
    case Role::Loop: return "loop";
    case Role::LoopThreads: return "loop-threads";
    case Role::Worker: return "worker";
    case Role::WorkerThreads: return "worker-threads";
  }
  return "worker";
}

std::string call_kind_name(CallKind k) {
  switch (k) {
    case CallKind::None: return "";
    case CallKind::File: return "file";
    case CallKind::Pipe: return "pipe";
    case CallKind::Socket: return "socket";
    case CallKind::OtherFd: return "other";
    case CallKind::Path: return "path";
    case CallKind::FdStat: return "fd";
    case CallKind::Create: return "create";
  }
  return "";
}

std::string call_label(int nr, CallKind kind) {
  const std::string name = sys::name(nr);
  // Kinds matter where one syscall means different things (stat of a path or
  // of an fd; read of a file or of a pipe).
  const bool qualify = kind != CallKind::None && !(kind == CallKind::Path && sys::is_open(nr));
  return qualify ? fmt::format("{}({})", name, call_kind_name(kind)) : name;
}

LoaderFigures loader_figures(const Evidence& e) {
  LoaderFigures f;
  const double window_ns = e.window_s * 1e9;
  double loop_wait_ns = 0;
  double worker_wait_ns = 0, worker_io_ns = 0;
  for (const auto& s : e.syscalls) {
    if (s.role == Role::Loop && is_wait_call(s.nr, s.kind)) loop_wait_ns += static_cast<double>(s.hist.total_ns);
    if (s.role != Role::Worker) continue;
    if (is_wait_call(s.nr, s.kind)) worker_wait_ns += static_cast<double>(s.hist.total_ns);
    if (is_io_call(s.nr, s.kind)) worker_io_ns += static_cast<double>(s.hist.total_ns);
    if (sys::is_open(s.nr) && s.kind == CallKind::Path) f.worker_opens += s.hist.count;
    if (s.kind == CallKind::File && sys::is_read(s.nr)) {
      f.worker_read_bytes += s.hist.bytes;
      f.worker_file_reads += s.hist.count;
    }
  }
  if (e.ebpf && window_ns > 0) {
    // The loop's time counts from its first wait for a batch: a launched job
    // spends its first seconds importing and indexing, which is not feeding.
    double from_ns = 0;
    if (!e.waits.empty()) {
      from_ns = std::min_element(e.waits.begin(), e.waits.end(), [](const WaitSpan& a, const WaitSpan& b) {
                  return a.t_s < b.t_s;
                })->t_s * 1e9;
    }
    const double active_ns = std::max(window_ns - from_ns, window_ns * 0.05);
    f.loop_active_s = active_ns / 1e9;
    f.data_wait_fraction = std::clamp(loop_wait_ns / (active_ns * std::max(1, e.ranks)), 0.0, 1.0);
  } else if (e.sampled.loop_samples > 0) {
    f.data_wait_fraction = static_cast<double>(e.sampled.loop_waiting) / e.sampled.loop_samples;
    f.data_wait_sampled = true;
  }

  // Workers: wall time each was alive in the window; most alive at once per rank.
  std::map<int, std::vector<std::pair<double, int>>> edges;  // rank -> (time, +1/-1)
  int d_samples = 0, all_samples = 0;
  for (const auto& p : e.processes) {
    if (!p.worker) continue;
    ++f.workers_total;
    if (!p.exited) ++f.live_workers;
    f.worker_wall_s += std::max(0.0, p.last_seen_s - p.first_seen_s);
    f.worker_cpu_s += p.cpu_s;
    edges[p.rank].push_back({p.first_seen_s, +1});
    edges[p.rank].push_back({p.last_seen_s, -1});
    for (const auto& [state, n] : p.states) {
      all_samples += n;
      if (state == 'D') d_samples += n;
    }
  }
  for (auto& [rank, ev] : edges) {
    std::sort(ev.begin(), ev.end(), [](auto a, auto b) { return a.first != b.first ? a.first < b.first : a.second > b.second; });
    int alive = 0;
    for (const auto& [t, d] : ev) f.max_workers_per_rank = std::max(f.max_workers_per_rank, alive += d);
  }
  f.worker_d_state_share = all_samples ? static_cast<double>(d_samples) / all_samples : 0.0;
  f.worker_cpu_s = std::min(f.worker_cpu_s, f.worker_wall_s);

  if (e.ebpf && f.worker_wall_s > 0) {
    f.worker_wait_s = std::min(worker_wait_ns / 1e9, f.worker_wall_s);
    f.worker_io_s = worker_io_ns / 1e9;
    const double busy = f.worker_wall_s - f.worker_wait_s;
    f.worker_busy_fraction = busy / f.worker_wall_s;
    if (busy > 0) {
      f.worker_io_share = std::min(1.0, f.worker_io_s / busy);
      f.worker_cpu_share = std::min(1.0, f.worker_cpu_s / busy);
    }
  } else if (e.sampled.worker_samples > 0) {
    const double n = e.sampled.worker_samples;
    f.worker_busy_fraction = 1.0 - e.sampled.worker_waiting / n;
    const double busy = n - e.sampled.worker_waiting;
    if (busy > 0) {
      f.worker_io_share = e.sampled.worker_in_io / busy;
      f.worker_cpu_share = e.sampled.worker_running / busy;
    }
    f.worker_wait_s = f.worker_wall_s * (e.sampled.worker_waiting / n);
  }
  return f;
}

namespace {

// Standard deviation of the values in [lo, hi] (sorted or not).
double stddev_between(const std::vector<double>& v, double lo, double hi) {
  double sum = 0, sq = 0;
  int n = 0;
  for (double g : v) {
    if (g < lo || g > hi) continue;
    sum += g;
    sq += g * g;
    ++n;
  }
  if (n < 2) return 0;
  const double mean = sum / n;
  return std::sqrt(std::max(0.0, sq / n - mean * mean));
}

// The step whose whole multiples the sorted gaps are, if they are: from the
// lowest cluster ([g, 1.3 g]) holding at least 5% of the gaps (and 3)
// upwards, the first cluster median such that at least 80% of the gaps of
// half that or more lie within 20% of a step of k steps, those gaps are at
// least half of all, and at least half of them hold at most 4 steps.
// Shorter gaps are one wait split in two by the calls that receive a batch
// (over 1 ms apart on a loaded machine), not steps.
std::optional<double> base_of_multiples(const std::vector<double>& sorted) {
  const std::size_t need = std::max<std::size_t>(3, sorted.size() / 20);
  for (std::size_t i = 0; i + need <= sorted.size();) {
    if (sorted[i] <= 0) {
      ++i;
      continue;
    }
    const auto end = std::upper_bound(sorted.begin() + static_cast<long>(i), sorted.end(), 1.3 * sorted[i]);
    const std::vector<double> cluster(sorted.begin() + static_cast<long>(i), end);
    if (cluster.size() < need) {
      ++i;
      continue;
    }
    const double base = quantile_sorted(cluster, 0.5);
    std::size_t steps = 0, fits = 0, few = 0;
    for (double g : sorted) {
      if (g < 0.5 * base) continue;
      ++steps;
      const double k = std::round(g / base);
      fits += std::abs(g - k * base) <= 0.2 * base;
      few += k <= 4;
    }
    // Most gaps must hold few steps: any gap is some multiple of a tiny
    // base (a cluster of split waits) give or take 20% of it.
    if (2 * steps >= sorted.size() && 5 * fits >= 4 * steps && 2 * few >= steps) return base;
    i = static_cast<std::size_t>(end - sorted.begin());  // the next cluster up
  }
  return std::nullopt;
}

}  // namespace

LoopStep loop_step(const Evidence& e, double merge_ms, int min_cycles, double min_regularity,
                   std::optional<double> known_step_ms) {
  LoopStep out;
  if (!e.ebpf) {
    out.unavailable = "syscall tracing did not run (the loop's waits are not timed by /proc sampling)";
    return out;
  }
  std::map<int, std::vector<WaitSpan>> by_loop;
  for (const auto& w : e.waits) by_loop[w.pid].push_back(w);
  std::vector<double> gaps;
  for (auto& [pid, spans] : by_loop) {
    std::sort(spans.begin(), spans.end(), [](const WaitSpan& a, const WaitSpan& b) { return a.t_s < b.t_s; });
    // Merge the calls of one wait, then take the gaps between waits.
    std::vector<std::pair<double, double>> waits;  // start, end (ms)
    for (const auto& s : spans) {
      const double start = s.t_s * 1e3, end = start + s.dur_ms;
      if (!waits.empty() && start - waits.back().second < merge_ms) {
        waits.back().second = std::max(waits.back().second, end);
      } else {
        waits.emplace_back(start, end);
      }
    }
    for (std::size_t i = 1; i < waits.size(); ++i) {
      const double gap = waits[i].first - waits[i - 1].second;
      gaps.push_back(gap);
    }
    if (waits.size() > 1) {
      ++out.loops;
      out.span_s += (waits.back().second - waits.front().second) / 1e3;
    }
  }
  if (out.loops > 0) out.span_s /= out.loops;
  out.cycles = static_cast<int>(gaps.size());
  if (out.cycles < min_cycles) {
    out.unavailable = fmt::format("only {} waits for data between steps were seen (the loop seldom waits: it is fed, "
                                  "or the window was short)", out.cycles);
    return out;
  }
  std::sort(gaps.begin(), gaps.end());
  const double median = quantile_sorted(gaps, 0.5);
  out.p10_ms = quantile_sorted(gaps, 0.1);
  out.p90_ms = quantile_sorted(gaps, 0.9);
  // A loop that finds some batches ready does not wait before those steps
  // (waits under 0.5 ms are not recorded), so its gaps are whole multiples
  // of one step: the lowest well-populated cluster, when the gaps really are
  // its multiples. Otherwise only regular gaps give a step (their median).
  const bool regular = out.p10_ms >= min_regularity * median;
  const auto base = known_step_ms && *known_step_ms > 0 ? known_step_ms : base_of_multiples(gaps);
  if (!base && !regular) {
    out.unavailable = fmt::format("the gaps between the loop's waits are irregular (p10 {:.1f} ms, median {:.1f} ms) "
                                  "and are not multiples of one step", out.p10_ms, median);
    return out;
  }
  const double step = base.value_or(median);
  // Each gap spans k steps, k - 1 of which found their batch ready; gaps
  // under half a step are split waits. The figures come from one-step gaps.
  std::vector<double> single;
  double steps = 0, waits = 0;
  for (double g : gaps) {
    if (g < 0.5 * step) continue;
    const double k = std::round(g / step);
    steps += k;
    ++waits;
    if (k == 1) single.push_back(g);
  }
  out.steps = static_cast<int>(steps);
  out.ready_fraction = steps > 0 ? 1.0 - waits / steps : 0.0;
  if (single.empty()) single.push_back(step);  // every gap held several steps of the known one
  out.median_ms = quantile_sorted(single, 0.5);
  out.p10_ms = quantile_sorted(single, 0.1);
  out.p90_ms = quantile_sorted(single, 0.9);
  out.spread_ms = stddev_between(single, out.p10_ms, out.p90_ms);
  return out;
}

PathLatency path_latency(const Evidence& e, bool stats, const std::string& mount) {
  auto wanted = [stats](int nr) { return stats ? sys::is_stat(nr) : sys::is_open(nr); };
  PathLatency out;
  std::vector<double> exact_ns;
  for (const auto& c : e.slow_calls) {
    if (c.kind == CallKind::Path && wanted(c.nr) && (mount.empty() || c.mount_point == mount)) {
      exact_ns.push_back(c.dur_ms * 1e6);
    }
  }
  if (!mount.empty()) {
    // Per mount only the calls above the threshold are known individually.
    out.calls = exact_ns.size();
    for (double v : exact_ns) out.total_s += v / 1e9;
    if (auto v = exact_quantile(exact_ns, 0.5)) out.p50_ms = *v / 1e6;
    if (auto v = exact_quantile(exact_ns, 0.99)) out.p99_ms = *v / 1e6;
    return out;
  }
  LatencyHistogram all;
  for (const auto& s : e.syscalls) {
    if (s.kind == CallKind::Path && wanted(s.nr)) all.merge(s.hist);
  }
  out.calls = all.count;
  out.total_s = static_cast<double>(all.total_ns) / 1e9;
  const double threshold = e.slow_threshold_ms * 1e6;
  if (auto v = all.quantile_ns(0.5, exact_ns, threshold)) out.p50_ms = *v / 1e6;
  if (auto v = all.quantile_ns(0.99, exact_ns, threshold)) out.p99_ms = *v / 1e6;
  return out;
}

std::vector<SlowGroup> slow_groups(const Evidence& e) {
  struct Acc {
    SlowGroup g;
    std::vector<double> stat, open, read;
  };
  std::map<std::pair<std::string, std::string>, Acc> by;
  for (const auto& c : e.slow_calls) {
    const std::string mount = c.mount_point.empty() ? "?" : c.mount_point;
    const std::string prefix = c.path.empty() ? mount : group_prefix(c.path, c.mount_point.empty() ? "/" : mount);
    Acc& a = by[{mount, prefix}];
    a.g.mount_point = mount;
    a.g.fs_type = c.fs_type.empty() ? "?" : c.fs_type;
    a.g.prefix = prefix;
    ++a.g.calls;
    a.g.total_s += c.dur_ms / 1e3;
    if (c.kind == CallKind::Path && sys::is_stat(c.nr)) {
      ++a.g.stat_calls;
      a.stat.push_back(c.dur_ms);
    } else if (c.kind == CallKind::Path && sys::is_open(c.nr)) {
      ++a.g.open_calls;
      a.open.push_back(c.dur_ms);
    } else if (sys::is_read(c.nr)) {
      ++a.g.read_calls;
      a.read.push_back(c.dur_ms);
    }
  }
  std::vector<SlowGroup> out;
  for (auto& [key, a] : by) {
    a.g.stat_p50_ms = exact_quantile(a.stat, 0.5);
    a.g.stat_p99_ms = exact_quantile(a.stat, 0.99);
    a.g.open_p50_ms = exact_quantile(a.open, 0.5);
    a.g.open_p99_ms = exact_quantile(a.open, 0.99);
    a.g.read_p50_ms = exact_quantile(a.read, 0.5);
    out.push_back(a.g);
  }
  std::sort(out.begin(), out.end(), [](const SlowGroup& a, const SlowGroup& b) { return a.total_s > b.total_s; });
  return out;
}

}  // namespace gpufeed
