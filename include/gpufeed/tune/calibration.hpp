#pragma once
// The model, calibrated by trials (docs/tune.md): the measured per-sample
// costs and the step are what the built-in measurements say, but a target
// (the built-in loader under load, or the user's own job) can be slower per
// sample and per step. Two factors are fitted to the trials of the *other*
// configs (leave-one-out: the chosen config's own trial never grades its
// prediction): `sample_factor` scales each sample's fetch latency and CPU
// work, `step_factor` the step. The calibrated prediction is the simulation
// of the chosen config with both applied.
#include <string>
#include <vector>

#include "gpufeed/tune/dataloader_model.hpp"
#include "gpufeed/tune/search.hpp"

namespace gpufeed::tune {

struct Calibration {
  double sample_factor = 1;   // x fetch latency and CPU per sample
  double step_factor = 1;     // x step time (>= 1: a loop only adds to its step)
  int trials_used = 0;        // other configs the factors were fitted to (one trial each)
  int full_used = 0;          // of them, configs with a full trial (the rest: short-round ones)
  bool step_fitted = false;   // three or more, one the step limits (raw starvation < 10%)
  int other_regime_left_out = 0;  // configs left out for crowding the cores where the chosen does not, or the reverse
  int short_only_left_out = 0;    // short-round trials not fitted to: no other config had a full trial
  double samples_per_s = 0;   // the chosen config, simulated with the factors
  std::string describe() const;  // "x1.85 per sample, x1.20 step, fitted to 4 other configs' trials (1 full, 3 short-round)"
};

// The workload with both factors applied.
Workload calibrated(const Workload& w, double sample_factor, double step_factor);

// Whether `c` keeps more workers busy on the CPU than there are worker
// cores: each worker, while it works, spends cpu / (fetch + cpu) of its
// time on a core, so workers x ranks x that share is how many want a core
// at once. False wherever the fetch dominates (a slow store), however many
// workers wait on it.
bool crowds_cores(const Workload& w, const NodeShape& node, const Candidate& c);

// Fits the factors by least squares on log throughput over a grid (sample
// 0.25-4x, step 1-1.6x; a small pull towards 1x breaks ties). The step
// factor is fitted only from three configs on, one of them limited by the
// step in the raw model (starvation under 10%): otherwise the trials cannot
// tell a slower step from slower samples. Without other successful trials: factors 1 and
// the raw simulation. Where the CPU limits, the configs that keep more
// workers busy than cores (crowds_cores) and those that do not are
// mispredicted differently (a job's processes lose to that crowding more
// than the model charges), so only the trials on the chosen config's side
// count, when it has any. Short-round trials alone fit nothing: without a
// full trial among them the factors stay 1 and the raw model stands, since
// a job's short trial holds its start-up and a few seconds' noise, and
// factors fitted to that move the model away from the job.
// tune calibrates only a `--exec` target's model.
Calibration calibrate(const Workload& w, const NodeShape& node, const std::vector<Trial>& trials,
                      const Candidate& chosen, const SimOptions& options = {});

}  // namespace gpufeed::tune
