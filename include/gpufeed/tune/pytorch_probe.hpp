#pragma once
// What `tune --pytorch-probe` takes from python/gpufeed_pytorch_probe.py's
// answer (schema gpufeed.pytorch-probe/v1, docs/tune.md): what a stock
// PyTorch image pipeline costs on this machine, per sample in its worker and
// per batch in its training loop, so the built-in target's model and trials
// describe a PyTorch job rather than gpufeed's own loader.
#include <optional>
#include <string>

#include "gpufeed/document.hpp"
#include "gpufeed/tune/cpu_from_trials.hpp"

namespace gpufeed::tune {

struct PytorchCosts {
  double worker_cpu_ms = 0;         // per sample: decode, transform, collate, handing the batch over
  double loop_cpu_ms_per_batch = 0; // the loop process receiving and unpickling a batch
  std::string pipeline;             // what the probe ran, for the report
  std::string versions;             // "torch 1.13.0, PIL 9.4.0"
  // The built-in transform's CPU per sample on as many threads, timed in
  // turns with the probe (its process group paused meanwhile): 0 when it
  // did not run. A shared host's cores can swing by half for the same
  // decode within seconds, so each figure alone moves from one tune to the
  // next; their ratio, taken over the same seconds, is the pipeline's own.
  double builtin_cpu_ms = 0;
};

// What the pipeline costs per ms of the built-in transform: against the
// interleaved built-in figure when there is one, else against `fallback_ms`
// (phase 2's, timed at another moment).
double pytorch_ratio(const PytorchCosts& c, double fallback_ms);

// The factor the built-in trials scale each sample's CPU by, so that they
// pay about what the pipeline does (loader::with_cpu_scale): the ratio, or 1
// when the pipeline is the cheaper (the trials cannot run faster).
double trial_cpu_scale(double ratio);

// The pipeline's CPU per sample from built-in trials that ran at
// `trial_scale` times the built-in CPU: their figure times ratio /
// trial_scale. The trials time every sample over the whole search, so the
// model's final figures follow the machine's speed over minutes, not the
// probe's few seconds.
CpuFromTrials pytorch_cpu_from_trials(const CpuFromTrials& trials, double ratio, double trial_scale);

struct PytorchProbeReading {
  std::optional<PytorchCosts> costs;
  std::string error;  // why there are none: a sentence to quote
};

// Reads one probe answer. Figures must be finite, the worker's above 0 (a
// decode costs something) and the loop's at least 0.
PytorchProbeReading read_pytorch_probe(const Json& doc);

}  // namespace gpufeed::tune
