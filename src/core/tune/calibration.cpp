// Fitting the model to the trials of the other configs (calibration.hpp).
#include "gpufeed/tune/calibration.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>

namespace gpufeed::tune {
std::string Calibration::describe() const {
  if (short_only_left_out > 0) {
    return fmt::format("not fitted: the other configs had short-round trials only ({}), which hold a job's start-up "
                       "and a few seconds' noise; the raw model",
                       short_only_left_out);
  }
  if (trials_used == 0) return "no other config's trial to fit to: the raw model";
  std::string out =
      fmt::format("x{:.2f} per sample, x{:.2f} step, fitted to {} other {} ({} full, {} short-round)", sample_factor,
                  step_factor, trials_used, trials_used == 1 ? "config's trial" : "configs' trials", full_used,
                  trials_used - full_used);
  if (other_regime_left_out > 0) {
    out += fmt::format("; {} left out: on the other side of the cores' limit from the chosen config", other_regime_left_out);
  }
  return out;
}

bool crowds_cores(const Workload& w, const NodeShape& node, const Candidate& c) {
  const double cpu = w.cpu_ms.mean();
  if (cpu <= 0) return false;
  const int outstanding = c.workers * node.ranks;
  const double fetch = w.storage.levels.empty() ? 0.0 : w.storage.at(outstanding).mean();
  return outstanding * cpu / (cpu + fetch) > node.worker_cores + 1e-9;
}

Workload calibrated(const Workload& w, double sample_factor, double step_factor) {
  Workload c = w;
  for (auto& level : c.storage.levels) level.latency = level.latency.scaled(sample_factor);
  c.cpu_ms = c.cpu_ms.scaled(sample_factor);
  c.step_ms = c.step_ms.scaled(step_factor);
  return c;
}

Calibration calibrate(const Workload& w, const NodeShape& node, const std::vector<Trial>& trials,
                      const Candidate& chosen, const SimOptions& options) {
  // The other configs' measurements, one figure per config: its full trial
  // when it had one, else its short-round one. Both kinds count: round 2
  // gives full trials to two or three configs, too few to tell a slower
  // step from slower samples, and a short round (past the job's start-up,
  // which an exec trial's steady-state figure leaves out) is no slower
  // than a full one, only noisier.
  Calibration out;
  std::map<std::tuple<int, int, bool>, std::pair<int, double>> measured;  // -> (round, samples/s)
  for (const auto& t : trials) {
    if (!t.ok || t.samples_per_s <= 0 || t.candidate == chosen) continue;
    const auto key = std::make_tuple(t.candidate.workers, t.candidate.prefetch_factor, t.candidate.pin_memory);
    auto [it, inserted] = measured.emplace(key, std::make_pair(t.round, t.samples_per_s));
    if (!inserted && t.round >= it->second.first) it->second = {t.round, t.samples_per_s};
  }
  // Keep the chosen config's side of the cores' limit, when it has trials:
  // configs that crowd the cores run slower than the model for reasons a
  // config within them does not share, and a fit to them would put the
  // chosen config low where the raw model is close.
  const auto key_candidate = [](const auto& key) {
    return Candidate{std::get<0>(key), std::get<1>(key), std::get<2>(key)};
  };
  const bool chosen_crowds = crowds_cores(w, node, chosen);
  int same_side = 0;
  for (const auto& [key, figure] : measured) same_side += crowds_cores(w, node, key_candidate(key)) == chosen_crowds;
  if (same_side > 0) {
    for (auto it = measured.begin(); it != measured.end();) {
      if (crowds_cores(w, node, key_candidate(it->first)) != chosen_crowds) {
        it = measured.erase(it);
        ++out.other_regime_left_out;
      } else {
        ++it;
      }
    }
  }
  for (const auto& [key, figure] : measured) out.full_used += figure.first == 2 ? 1 : 0;
  if (out.full_used == 0 && !measured.empty()) {
    out.short_only_left_out = static_cast<int>(measured.size());
    measured.clear();
  }
  out.trials_used = static_cast<int>(measured.size());
  // A slower step shows only in configs the step limits: with none of them
  // among the trials (the raw model has them all starving), a step factor
  // would fit the noise of supply-limited ones (on the incident: x1.30,
  // and the chosen config, step-limited, predicted 17% low). Nor can fewer
  // than three trials tell a slower step from slower samples.
  int step_limited = 0;
  for (const auto& [key, figure] : measured) {
    const Candidate c = key_candidate(key);
    if (simulate(w, node, c, options).starvation < 0.10) ++step_limited;
  }
  out.step_fitted = measured.size() >= 3 && step_limited > 0;
  double best_sample = 1, best_step = 1;
  if (!measured.empty()) {
    double best_cost = std::numeric_limits<double>::infinity();
    for (int i = 0; i <= 24; ++i) {  // 0.25x .. 4x, geometric
      const double k = std::pow(2.0, -2.0 + i / 6.0);
      const int step_points = out.step_fitted ? 12 : 0;
      for (int j = 0; j <= step_points; ++j) {  // 1x .. 1.6x
        const double s = 1.0 + 0.05 * j;
        const Workload cw = calibrated(w, k, s);
        double cost = 0.01 * (std::log(k) * std::log(k) + std::log(s) * std::log(s));
        for (const auto& [key, figure] : measured) {
          const double value = figure.second;
          const Candidate c = key_candidate(key);
          const double predicted = simulate(cw, node, c, options).samples_per_s;
          const double e = predicted > 0 ? std::log(predicted / value) : 10.0;
          cost += e * e;
        }
        if (cost < best_cost) {
          best_cost = cost;
          best_sample = k;
          best_step = s;
        }
      }
    }
  }
  out.sample_factor = best_sample;
  out.step_factor = best_step;
  out.samples_per_s = simulate(calibrated(w, best_sample, best_step), node, chosen, options).samples_per_s;
  return out;
}

}  // namespace gpufeed::tune
