#pragma once
// What `tune --exec`'s trials learn of how the user's job reports its
// figure, and how long the next trial waits for its first one. Pure.
#include <cstdint>
#include <vector>

namespace gpufeed::tune {

struct JobPacing {
  bool figures_seen = false;
  double startup_s = 0;         // launch to first figure (the longest seen)
  double interval_s = 0;        // between figures, median (0: one figure per run)
  bool ends_by_itself = false;  // it printed one figure, when it ended
  double run_s = 0;             // such a job's whole run (the longest seen)
  // A job that reports at its end and runs {steps} batches: the highest
  // figure it printed, and its lead, launch to the first batch its figure
  // counts from (the longest seen).
  double rate_seen = 0;
  double lead_s = 0;

  // How long a trial waits for the job's first figure: the first trial
  // (its pacing unknown) up to `first_figure_cap_s`; later ones twice the
  // start-up the earlier ones showed (a job that prints once, at its end:
  // 1.5x its longest run or the round's cap, whichever is more), at least
  // the round's `cap_s`.
  double startup_cap_s(double cap_s, double first_figure_cap_s) const;

  // One trial's figures: its start-up, the gaps between its figures, whether
  // it ended by itself, and its whole run.
  void learn(double trial_startup_s, const std::vector<double>& gaps_s, bool ended_by_itself, double trial_run_s);

  // A job that reports at its end, asked for `batches` ({steps}), printed
  // `samples_per_s` (over the batches after its first, as a steady-state
  // figure is) `figure_at_s` after its launch: its lead is what the run
  // spent before those batches.
  void learn_run(double samples_per_s, std::uint64_t batches, int batch_size, double figure_at_s);

  // The batches to ask ({steps}) for `steps` steady steps of a config whose
  // warm-up is `warmup` batches (prefetch x workers) and whose first wave,
  // the batches its workers build at once, is `first_wave` (one per
  // worker): all of them while the run fits `cap_s` at the highest rate
  // seen, else as many as fit, down to the first wave and the steps. The
  // warm-up goes first because a job's own figure counts it anyway: past
  // the first wave, in a loop that takes batches as its workers start, a
  // queue that fills drains at the step and one that never fills holds no
  // backlog, and neither moves the figure. Before any trial has shown the
  // job's rate, `model_rate` (the model's samples/s for this config; 0:
  // none) sizes it the same way, its lead taken as 0: a model that is
  // optimistic asks for more batches, never fewer than the first wave and
  // the steps. A job that runs on (reports periodically) gets them all: the
  // trial stops it at its time.
  std::uint64_t batches_to_ask(std::uint64_t warmup, std::uint64_t first_wave, int steps, int batch_size,
                               double cap_s, double model_rate = 0) const;
  // The rate batches_to_ask sizes by: the highest seen, else the model's
  // before the first figure, else 0 (every batch asked for).
  double sizing_rate(double model_rate) const;
};

}  // namespace gpufeed::tune
