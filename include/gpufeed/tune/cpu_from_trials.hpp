#pragma once
// The per-sample CPU cost as the built-in loader's own trials measured it
// (docs/tune.md). Phase 2 times the transform for well under a second; on a
// noisy machine that one window can read 10-30% off the minutes the trials
// then run in. The trials time every sample
// they transform, each at a known number of busy cores, so after the search
// the model's final figures use them: the cost with one core busy, and how
// much it grows when every worker core is.
#include <string>
#include <vector>

#include "gpufeed/tune/dataloader_model.hpp"
#include "gpufeed/tune/search.hpp"

namespace gpufeed::tune {

struct CpuFromTrials {
  bool used = false;       // false: too few trials, or too little CPU to matter
  double cpu_ms = 0;       // per sample with one core busy
  double slowdown = 1;     // Workload::cpu_slowdown_all_cores
  int trials = 0;          // trials the figures came from
  bool mean_only = false;  // a mean over trials that all had more workers than cores: no growth measured
  bool all_busy = false;   // cpu_time_from_trials: CPU time with every core busy (slowdown 1)
  std::string why_not;     // when not used
  std::string describe() const;  // "2.610 ms per sample with 1 core busy, x1.05 with all worker cores (5 trials)"
};

// Trials that kept no more workers (all ranks) than worker cores: their
// transform time is CPU work and contention, not waiting for a core. A
// weighted line through (busy cores, transform ms) gives the cost at one
// core and the growth to all of them (x1 to the lesser of x3 and the core
// count: a falling line is noise, a steeper one more than trials of seconds
// can show). Not used when the transform takes under `min_ms`.
CpuFromTrials cpu_from_trials(const std::vector<Trial>& trials, const NodeShape& node, double min_ms = 0.05);

// The workers' CPU time per sample (Trial::transform_cpu_ms) over the
// trials that kept every worker core busy (workers x ranks >= cores): what a
// sample costs with all cores busy, however many workers took turns on
// them, weighted by samples, with no further growth (slowdown 1). Every
// such trial counts, so the figure spans most of the search, not the few
// trials with no more workers than cores. Not used when none measured it.
CpuFromTrials cpu_time_from_trials(const std::vector<Trial>& trials, const NodeShape& node, double min_ms = 0.05);

// The workload with its CPU distribution scaled to `f.cpu_ms` (its shape
// kept) and the slowdown set; unchanged when `f` is not used.
Workload with_cpu_from_trials(const Workload& w, const CpuFromTrials& f);

}  // namespace gpufeed::tune
