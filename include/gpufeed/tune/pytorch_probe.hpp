#pragma once
// What `tune --pytorch-probe` takes from python/gpufeed_pytorch_probe.py's
// answer (schema gpufeed.pytorch-probe/v1, docs/tune.md): what a stock
// PyTorch image pipeline costs on this machine, per sample in its worker and
// per batch in its training loop, so the built-in target's model and trials
// describe a PyTorch job rather than gpufeed's own loader.
#include <optional>
#include <string>

#include "gpufeed/document.hpp"

namespace gpufeed::tune {

struct PytorchCosts {
  double worker_cpu_ms = 0;         // per sample: decode, transform, collate, handing the batch over
  double loop_cpu_ms_per_batch = 0; // the loop process receiving and unpickling a batch
  std::string pipeline;             // what the probe ran, for the report
  std::string versions;             // "torch 1.13.0, PIL 9.4.0"
};

struct PytorchProbeReading {
  std::optional<PytorchCosts> costs;
  std::string error;  // why there are none: a sentence to quote
};

// Reads one probe answer. Figures must be finite, the worker's above 0 (a
// decode costs something) and the loop's at least 0.
PytorchProbeReading read_pytorch_probe(const Json& doc);

}  // namespace gpufeed::tune
