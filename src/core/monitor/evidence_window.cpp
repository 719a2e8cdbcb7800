#include "gpufeed/monitor/evidence_window.hpp"

#include <algorithm>
#include <tuple>

namespace gpufeed {
namespace {

auto stat_key(const SyscallStat& s) { return std::make_tuple(s.nr, static_cast<int>(s.role), static_cast<int>(s.kind)); }

std::vector<SyscallStat> histogram_deltas(const std::vector<SyscallStat>& before, const std::vector<SyscallStat>& now) {
  std::map<decltype(stat_key(now.front())), const SyscallStat*> earlier;
  for (const auto& s : before) earlier[stat_key(s)] = &s;
  std::vector<SyscallStat> out;
  for (const auto& s : now) {
    SyscallStat d = s;
    if (auto it = earlier.find(stat_key(s)); it != earlier.end()) d.hist = s.hist.since(it->second->hist);
    if (d.hist.count > 0) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

EvidenceWindow::EvidenceWindow(WindowSettings settings) : settings_(settings) {
  settings_.max_ticks = std::max<std::size_t>(settings_.max_ticks, 2);
  settings_.max_events = std::max<std::size_t>(settings_.max_events, 1);
}

void EvidenceWindow::track(int pid, int ppid, int rank, bool worker, const std::string& comm, double t_s, bool born_now) {
  auto [it, inserted] = processes_.try_emplace(pid);
  if (!inserted) return;
  Followed& f = it->second;
  f.info = ProcessInfo::seen(pid, rank, worker, t_s);
  f.info.ppid = ppid;
  f.info.comm = comm;
  f.born_now = born_now;
}

void EvidenceWindow::exited(int pid, double t_s, std::optional<int> exit_code) {
  auto it = processes_.find(pid);
  if (it == processes_.end() || it->second.info.exited) return;
  it->second.info.exited = true;
  it->second.info.last_seen_s = std::max(it->second.info.first_seen_s, t_s);
  it->second.info.exit_code = exit_code;
}

void EvidenceWindow::add_tick(WindowTick tick) {
  const double spacing = settings_.window_s / static_cast<double>(settings_.max_ticks - 1);
  if (latest_ && (ticks_.empty() || latest_->t_s - ticks_.back().t_s >= spacing)) ticks_.push_back(std::move(*latest_));
  for (const auto& [pid, reading] : tick.processes) {
    auto it = processes_.find(pid);
    if (it == processes_.end()) continue;
    Followed& f = it->second;
    if (!f.info.exited) f.info.last_seen_s = tick.t_s;
    if (!f.has_reading) f.first = reading;
    f.has_reading = true;
    f.last = reading;
  }
  latest_ = std::move(tick);
  prune();
}

void EvidenceWindow::add_slow_call(SlowCall call) {
  if (slow_.size() >= settings_.max_events) {
    slow_.pop_front();
    ++dropped_;
  }
  slow_.push_back(std::move(call));
}

void EvidenceWindow::add_wait(WaitSpan wait) {
  if (waits_.size() >= settings_.max_events) {
    waits_.pop_front();
    ++dropped_;
  }
  waits_.push_back(wait);
}

const WindowTick* EvidenceWindow::start() const {
  if (!ticks_.empty()) return &ticks_.front();
  return latest_ ? &*latest_ : nullptr;
}

double EvidenceWindow::span_s() const {
  const WindowTick* s = start();
  return s && latest_ ? latest_->t_s - s->t_s : 0.0;
}

void EvidenceWindow::prune() {
  const double cutoff = now_s() - settings_.window_s;
  // Keep the last snapshot at or before the cutoff: the window then spans
  // its whole length (up to one spacing more), never less.
  while (ticks_.size() >= 2 && ticks_[1].t_s <= cutoff) ticks_.pop_front();
  while (ticks_.size() + 1 > settings_.max_ticks) ticks_.pop_front();
  const double from = start() ? start()->t_s : 0.0;
  while (!slow_.empty() && slow_.front().t_s < from) slow_.pop_front();
  while (!waits_.empty() && waits_.front().t_s < from) waits_.pop_front();
  for (auto it = processes_.begin(); it != processes_.end();) {
    if (it->second.info.exited && it->second.info.last_seen_s < from) {
      it = processes_.erase(it);
    } else {
      ++it;
    }
  }
}

Evidence EvidenceWindow::evidence(const WindowHost& host) const {
  Evidence e;
  e.ranks = std::max(1, host.ranks);
  e.ebpf = host.ebpf;
  e.ebpf_unavailable = host.ebpf_unavailable;
  e.slow_threshold_ms = host.slow_threshold_ms;
  e.events_dropped = dropped_;
  const WindowTick* s = start();
  if (!s) return e;
  const WindowTick& l = *latest_;
  const double t0 = s->t_s;
  e.window_s = l.t_s - t0;
  e.syscalls = histogram_deltas(s->syscalls, l.syscalls);
  for (const SlowCall& c : slow_) {
    if (c.t_s < t0) continue;
    e.slow_calls.push_back(c);
    e.slow_calls.back().t_s -= t0;
  }
  for (const WaitSpan& w : waits_) {
    if (w.t_s < t0) continue;
    e.waits.push_back(w);
    e.waits.back().t_s -= t0;
  }

  std::vector<const WindowTick*> looks;  // the snapshots inside the window, oldest first
  for (const WindowTick& t : ticks_) looks.push_back(&t);
  looks.push_back(&l);
  for (const auto& [pid, f] : processes_) {
    if (f.info.exited && f.info.last_seen_s < t0) continue;
    ProcessInfo p = f.info;
    p.first_seen_s = std::max(f.info.first_seen_s, t0) - t0;
    p.last_seen_s = std::max(p.first_seen_s, (f.info.exited ? f.info.last_seen_s : l.t_s) - t0);
    std::uint64_t base = f.born_now ? 0 : f.first.cpu_ticks;
    if (auto it = s->processes.find(pid); it != s->processes.end()) base = it->second.cpu_ticks;
    p.cpu_s = static_cast<double>(f.last.cpu_ticks - std::min(f.last.cpu_ticks, base)) / settings_.clock_ticks_per_s;
    for (const WindowTick* t : looks) {
      if (auto it = t->processes.find(pid); it != t->processes.end()) {
        p.states[it->second.state] += 1;
        p.max_rss_bytes = std::max(p.max_rss_bytes, it->second.rss_bytes);
      }
    }
    e.processes.push_back(std::move(p));
  }

  HostActivity& h = e.host;
  h.usable_cpus = host.usable_cpus;
  h.samples = static_cast<int>(looks.size());
  h.sample_hz = e.window_s > 0 ? static_cast<double>(looks.size() - 1) / e.window_s : 0.0;
  for (std::size_t i = 1; i < looks.size(); ++i) {
    if (!looks[i - 1]->stat || !looks[i]->stat) continue;
    const CpuUse use = cpu_use(*looks[i - 1]->stat, *looks[i]->stat, host.cpus);
    h.series.push_back({looks[i]->t_s - t0, use.busy_pct, use.iowait_pct});
  }
  if (s->stat && l.stat && s != &l) {
    const CpuUse use = cpu_use(*s->stat, *l.stat, host.cpus);
    h.cpu_busy_pct = use.busy_pct;
    h.cpu_iowait_pct = use.iowait_pct;
    for (int cpu : host.cpus) {
      const CpuUse one = cpu_use(*s->stat, *l.stat, {cpu});
      h.per_cpu.push_back({cpu, one.busy_pct, one.iowait_pct});
    }
    if (e.window_s > 0) h.ctx_switches_per_s = static_cast<double>(l.stat->ctxt - std::min(l.stat->ctxt, s->stat->ctxt)) / e.window_s;
  }
  auto psi = [&](const char* res) -> std::optional<double> {
    auto a = s->psi_total_us.find(res);
    auto b = l.psi_total_us.find(res);
    if (a == s->psi_total_us.end() || b == l.psi_total_us.end() || e.window_s <= 0) return std::nullopt;
    return 100.0 * static_cast<double>(b->second - std::min(b->second, a->second)) / (e.window_s * 1e6);
  };
  h.psi_cpu_some_pct = psi("cpu");
  h.psi_io_some_pct = psi("io");
  h.psi_memory_some_pct = psi("memory");
  h.mem_available_bytes = l.mem.available_bytes;
  h.page_cache_bytes = l.mem.cached_bytes;
  return e;
}

}  // namespace gpufeed
