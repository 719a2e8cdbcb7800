// A job's CPU per role from snapshots of its process group (job_cpu.hpp).
#include "gpufeed/tune/job_cpu.hpp"

#include <algorithm>
#include <map>

namespace gpufeed::tune {

std::vector<JobLoop> job_loops(const std::vector<JobProcess>& procs) {
  std::map<int, std::vector<int>> children;
  std::map<int, bool> present;
  for (const auto& p : procs) present[p.pid] = true;
  for (const auto& p : procs) {
    if (present.count(p.ppid)) children[p.ppid].push_back(p.pid);
  }
  std::vector<JobLoop> out;
  for (const auto& [parent, kids] : children) {
    const bool all_leaves = std::all_of(kids.begin(), kids.end(), [&](int k) { return !children.count(k); });
    if (all_leaves) out.push_back({parent, kids});
  }
  return out;
}

JobCpu job_cpu_between(const std::vector<JobProcess>& before, const std::vector<JobProcess>& after) {
  std::map<int, double> spent_before, spent_after;
  for (const auto& p : before) spent_before[p.pid] = p.cpu_s;
  for (const auto& p : after) spent_after[p.pid] = p.cpu_s;
  auto spent = [&](int pid) {
    const auto it = spent_before.find(pid);
    return std::max(0.0, spent_after[pid] - (it == spent_before.end() ? 0.0 : it->second));
  };
  JobCpu out;
  for (const auto& loop : job_loops(after)) {
    ++out.loops;
    out.loop_cpu_s += spent(loop.pid);
    for (int w : loop.workers) {
      ++out.workers;
      out.worker_cpu_s += spent(w);
    }
  }
  return out;
}

void record_job_cpu(Trial& trial, const JobCpu& cpu, double samples_per_s, double seconds, int batch_size, int ranks) {
  if (ranks < 1 || cpu.loops != ranks || cpu.workers < 1 || samples_per_s <= 0 || seconds <= 0 || batch_size < 1) return;
  const double samples = samples_per_s * seconds * ranks;  // the metric is per rank
  if (samples < 1) return;
  trial.transform_ms = cpu.worker_cpu_s * 1e3 / samples;
  trial.transform_samples = static_cast<std::uint64_t>(samples);
  const double loop_ms = cpu.loop_cpu_s * 1e3 / samples * batch_size;
  trial.loop_cpu_ms = loop_ms >= 0.01 ? loop_ms : 0;
}

namespace {

// The full trials that measured the job's CPU, when there are any: their
// windows are longer. A short trial's opens at the job's first figure and
// lasts a few seconds, too short for a steady CPU figure on a noisy host.
std::vector<Trial> measured_trials(const std::vector<Trial>& trials) {
  std::vector<Trial> out;
  for (int round : {2, 1}) {
    for (const auto& t : trials) {
      if (t.ok && t.transform_samples > 0 && t.round == round) out.push_back(t);
    }
    if (!out.empty()) break;
  }
  return out;
}

}  // namespace

CpuFromTrials job_cpu_from_trials(const std::vector<Trial>& all, const NodeShape& node) {
  const std::vector<Trial> trials = measured_trials(all);
  CpuFromTrials out = cpu_from_trials(trials, node);
  if (out.used) return out;
  double samples = 0, ms = 0;
  int n = 0;
  for (const auto& t : trials) {
    if (!t.ok || t.transform_samples == 0) continue;
    samples += static_cast<double>(t.transform_samples);
    ms += t.transform_ms * static_cast<double>(t.transform_samples);
    ++n;
  }
  if (n == 0 || ms / samples < 0.05) return out;  // nothing measured, or too little CPU to matter
  out = {};
  out.used = true;
  out.cpu_ms = ms / samples;
  out.trials = n;
  out.mean_only = true;
  return out;
}

Workload with_job_cpu(const Workload& w, const CpuFromTrials& f) {
  const double measured = w.cpu_ms.mean();
  if (!f.used || (measured > 0 && f.cpu_ms <= 3 * measured && f.cpu_ms >= measured / 3)) return with_cpu_from_trials(w, f);
  Workload out = w;
  out.cpu_ms = Distribution::constant(f.cpu_ms);
  out.cpu_slowdown_all_cores = f.slowdown;
  return out;
}

double loop_cpu_from_trials(const std::vector<Trial>& trials) {
  std::vector<double> v;
  for (const auto& t : measured_trials(trials)) {
    if (t.loop_cpu_ms > 0) v.push_back(t.loop_cpu_ms);
  }
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

namespace {

std::vector<std::pair<int, std::size_t>> loop_shape(const std::vector<JobProcess>& procs) {
  std::vector<std::pair<int, std::size_t>> shape;
  for (const auto& l : job_loops(procs)) shape.emplace_back(l.pid, l.workers.size());
  return shape;
}

std::set<int> workers_of(const std::vector<JobProcess>& procs) {
  std::set<int> out;
  for (const auto& l : job_loops(procs)) out.insert(l.workers.begin(), l.workers.end());
  return out;
}

}  // namespace

void JobCpuTrack::look(std::vector<JobProcess> procs, double t_s) {
  std::set<int> workers = workers_of(procs);
  if (started_ && !first_loops_.empty()) {
    if (loop_shape(procs) != first_loops_) return;
    const bool one_still_runs =
        std::any_of(workers.begin(), workers.end(), [&](int w) { return last_workers_.count(w) > 0; });
    if (!last_workers_.empty() && !one_still_runs) return;
  }
  last_ = std::move(procs);
  last_t_s_ = t_s;
  last_workers_ = std::move(workers);
}

void JobCpuTrack::first_figure() {
  started_ = true;
  first_ = last_;
  first_t_s_ = last_t_s_;
  first_loops_ = loop_shape(first_);
}

std::optional<JobCpu> JobCpuTrack::cpu() const {
  if (!started_ || first_.empty() || window_s() < 1.0) return std::nullopt;
  return job_cpu_between(first_, last_);
}

}  // namespace gpufeed::tune
