// The per-sample CPU cost from the built-in trials (cpu_from_trials.hpp).
#include "gpufeed/tune/cpu_from_trials.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gpufeed::tune {

std::string CpuFromTrials::describe() const {
  if (!used) return why_not;
  if (all_busy) {
    return fmt::format("{:.3f} ms of CPU per sample with all worker cores busy ({} trial{})", cpu_ms, trials,
                       trials == 1 ? "" : "s");
  }
  if (mean_only) {
    return fmt::format("{:.3f} ms per sample, the mean over {} trial{} with more workers than cores", cpu_ms, trials,
                       trials == 1 ? "" : "s");
  }
  return fmt::format("{:.3f} ms per sample with 1 core busy, x{:.2f} with all worker cores ({} trial{})", cpu_ms, slowdown,
                     trials, trials == 1 ? "" : "s");
}

CpuFromTrials cpu_from_trials(const std::vector<Trial>& trials, const NodeShape& node, double min_ms) {
  CpuFromTrials out;
  const double cores = node.worker_cores;
  struct Point {
    double x, y, weight;
  };
  std::vector<Point> points;
  for (const auto& t : trials) {
    // Busy cores: the workers alone. The ranks' loops also spin their CPU
    // per batch (tune --from) on these cores, a small share of each step;
    // the transform times then include some waiting for a core, which the
    // fit reads as slowdown, and the model charges that loop CPU again.
    const double busy = static_cast<double>(t.candidate.workers) * node.ranks;
    if (!t.ok || t.transform_samples == 0 || busy > cores + 1e-9) continue;
    const double x = cores > 1 ? (busy - 1) / (cores - 1) : 0.0;  // 0: one core busy .. 1: all
    points.push_back({x, t.transform_ms, static_cast<double>(t.transform_samples)});
  }
  if (points.empty()) {
    out.why_not = "no trial kept its workers within the worker cores";
    return out;
  }
  double sw = 0, sx = 0, sy = 0;
  for (const auto& p : points) {
    sw += p.weight;
    sx += p.weight * p.x;
    sy += p.weight * p.y;
  }
  const double mean_x = sx / sw, mean_y = sy / sw;
  if (mean_y < min_ms) {
    out.why_not = fmt::format("the trials' transform took {:.3f} ms per sample: too little CPU to refit", mean_y);
    return out;
  }
  double sxx = 0, sxy = 0;  // zero spread in x (one busy-core count): no slope
  for (const auto& p : points) {
    sxx += p.weight * (p.x - mean_x) * (p.x - mean_x);
    sxy += p.weight * (p.x - mean_x) * (p.y - mean_y);
  }
  const double slope = sxx > 0 ? sxy / sxx : 0;
  double a = mean_y - slope * mean_x;
  // At most x3, and never more than the cores: a growth of k with all C
  // cores busy makes them C / k times one core, and beyond k = C more busy
  // cores would do less in all, which no trial can have shown.
  const double cap = std::clamp(cores, 1.0, 3.0);
  double k = 1;
  if (slope <= 0) {  // faster with more cores busy: noise; one figure for all
    a = mean_y;
  } else if (a <= 0 || 1 + slope / a > cap) {  // steeper than the cap: keep the line's mean
    k = cap;
    a = mean_y / (1 + (k - 1) * mean_x);
  } else {
    k = 1 + slope / a;
  }
  out.used = true;
  out.cpu_ms = a;
  out.slowdown = k;
  out.trials = static_cast<int>(points.size());
  return out;
}

CpuFromTrials cpu_time_from_trials(const std::vector<Trial>& trials, const NodeShape& node, double min_ms) {
  CpuFromTrials out;
  double samples = 0, ms = 0;
  int n = 0;
  for (const auto& t : trials) {
    const double busy = static_cast<double>(t.candidate.workers) * node.ranks;
    if (!t.ok || t.transform_samples == 0 || t.transform_cpu_ms <= 0 || busy < node.worker_cores - 1e-9) continue;
    samples += static_cast<double>(t.transform_samples);
    ms += t.transform_cpu_ms * static_cast<double>(t.transform_samples);
    ++n;
  }
  if (n == 0) {
    out.why_not = "no trial kept every worker core busy and timed its CPU";
    return out;
  }
  if (ms / samples < min_ms) {
    out.why_not = fmt::format("the trials' transform took {:.3f} ms of CPU per sample: too little to refit", ms / samples);
    return out;
  }
  out.used = true;
  out.cpu_ms = ms / samples;
  out.trials = n;
  out.all_busy = true;
  return out;
}

Workload with_cpu_from_trials(const Workload& w, const CpuFromTrials& f) {
  if (!f.used || w.cpu_ms.mean() <= 0) return w;
  Workload out = w;
  out.cpu_ms = w.cpu_ms.scaled(f.cpu_ms / w.cpu_ms.mean());
  out.cpu_slowdown_all_cores = f.slowdown;
  return out;
}

}  // namespace gpufeed::tune
