#pragma once
// What `tune --exec`'s trials learn of how the user's job reports its
// figure, and how long the next trial waits for its first one. Pure.
#include <vector>

namespace gpufeed::tune {

struct JobPacing {
  bool figures_seen = false;
  double startup_s = 0;         // launch to first figure (the longest seen)
  double interval_s = 0;        // between figures, median (0: one figure per run)
  bool ends_by_itself = false;  // it printed one figure, when it ended
  double run_s = 0;             // such a job's whole run (the longest seen)

  // How long a trial waits for the job's first figure: the first trial
  // (its pacing unknown) up to `first_figure_cap_s`; later ones twice the
  // start-up the earlier ones showed (a job that prints once, at its end:
  // 1.5x its run), at least the round's `cap_s`.
  double startup_cap_s(double cap_s, double first_figure_cap_s) const;

  // One trial's figures: its start-up, the gaps between its figures, whether
  // it ended by itself, and its whole run.
  void learn(double trial_startup_s, const std::vector<double>& gaps_s, bool ended_by_itself, double trial_run_s);
};

}  // namespace gpufeed::tune
