#pragma once
// Hardware and workload presets (profiles/, docs/tune.md) turned into the
// model's inputs, for `tune --simulate` without hardware.
#include <string>

#include "gpufeed/document.hpp"
#include "gpufeed/tune/dataloader_model.hpp"

namespace gpufeed::tune {

struct HardwareProfile {
  std::string name, description, gpu_model;
  int gpus = 1;
  int cores = 1;
  int numa_nodes = 1;
  double memory_gib = 0;
  double pin_gb_per_s = 0;
  double pageable_h2d_penalty_ms_per_gib = 0;
};

struct WorkloadProfile {
  std::string name, description;
  double sample_bytes = 0;          // as stored
  double decoded_sample_bytes = 0;  // in the batch
  double cpu_median_ms = 0, cpu_sigma = 0;
  int batch_size = 32;
  double step_mean_ms = 0, step_spread_ms = 0;
  std::string storage_preset;       // a synthetic preset (docs/loader.md)
};

// Usage errors name `source` and the field.
HardwareProfile hardware_from_json(const Json& j, const std::string& source);
WorkloadProfile workload_from_json(const Json& j, const std::string& source);

// Workers' cores on the node: cores less 10% for the system and 2 per GPU
// for each rank's main and pin-memory threads (probe's budget policy).
NodeShape node_from(const HardwareProfile& hw);
Workload workload_from(const WorkloadProfile& w, const HardwareProfile& hw);

// A step time as a distribution: normal(mean, spread) clipped at 0.
Distribution step_distribution(double mean_ms, double spread_ms);

}  // namespace gpufeed::tune
