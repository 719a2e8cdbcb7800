#include "gpufeed/tune/job_pacing.hpp"

#include <algorithm>
#include <cmath>

#include "gpufeed/stats.hpp"

namespace gpufeed::tune {

double JobPacing::startup_cap_s(double cap_s, double first_figure_cap_s) const {
  const double first_cap = std::max(cap_s, first_figure_cap_s);
  if (!figures_seen) return first_cap;
  // A job that reports at its end is asked for what fits the cap
  // (batches_to_ask): 1.5x the cap or its longest run, whichever is more.
  const double learned = ends_by_itself ? 1.5 * std::max(run_s, cap_s) : 2 * startup_s;
  return std::min(first_cap, std::max(cap_s, learned));
}

void JobPacing::learn(double trial_startup_s, const std::vector<double>& gaps_s, bool ended_by_itself,
                      double trial_run_s) {
  const bool first = !figures_seen;
  figures_seen = true;
  startup_s = first ? trial_startup_s : std::max(startup_s, trial_startup_s);
  if (!gaps_s.empty()) {
    std::vector<double> sorted = gaps_s;
    std::sort(sorted.begin(), sorted.end());
    interval_s = quantile_sorted(sorted, 0.5);
  }
  // One figure, at its end: a job that reports when it finishes.
  ends_by_itself = ended_by_itself && gaps_s.empty();
  if (ends_by_itself) run_s = std::max(run_s, trial_run_s);
}

void JobPacing::learn_run(double samples_per_s, std::uint64_t batches, int batch_size, double figure_at_s) {
  if (samples_per_s <= 0 || batches < 2 || batch_size <= 0) return;
  rate_seen = std::max(rate_seen, samples_per_s);
  const double counted_s = static_cast<double>(batches - 1) * batch_size / samples_per_s;
  lead_s = std::max(lead_s, std::clamp(figure_at_s - counted_s, 0.0, figure_at_s));
}

double JobPacing::sizing_rate(double model_rate) const {
  if (ends_by_itself && rate_seen > 0) return rate_seen;
  // A job of {steps} batches most likely ends after them: until a trial
  // says otherwise, the model's rate stands in for the one unseen.
  if (!figures_seen && model_rate > 0) return model_rate;
  return 0;
}

std::uint64_t JobPacing::batches_to_ask(std::uint64_t warmup, std::uint64_t first_wave, int steps, int batch_size,
                                        double cap_s, double model_rate) const {
  const auto steady = static_cast<std::uint64_t>(std::max(1, steps));
  const std::uint64_t all = warmup + steady;
  const double rate = sizing_rate(model_rate);
  if (rate <= 0 || batch_size <= 0) return all;
  const double fit = 1 + std::max(0.0, cap_s - lead_s) * rate / batch_size;
  const std::uint64_t least = std::min(all, first_wave + steady);
  if (fit >= static_cast<double>(all)) return all;
  return std::max(least, static_cast<std::uint64_t>(std::floor(fit)));
}

}  // namespace gpufeed::tune
