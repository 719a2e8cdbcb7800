#include "gpufeed/tune/job_pacing.hpp"

#include <algorithm>

#include "gpufeed/stats.hpp"

namespace gpufeed::tune {

double JobPacing::startup_cap_s(double cap_s, double first_figure_cap_s) const {
  const double first_cap = std::max(cap_s, first_figure_cap_s);
  if (!figures_seen) return first_cap;
  const double learned = ends_by_itself ? 1.5 * run_s : 2 * startup_s;
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

}  // namespace gpufeed::tune
