#pragma once
// Phase 2 of `gpufeed tune`: measure what the model needs on this machine:
// the store's read latency at rising concurrency, the per-sample CPU cost,
// the step time and the pin-memory copy bandwidth.
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "gpufeed/loader/sample_source.hpp"
#include "gpufeed/loader/step.hpp"
#include "gpufeed/loader/storage_table.hpp"
#include "gpufeed/loader/transform.hpp"
#include "gpufeed/tune/dataloader_model.hpp"

namespace gpufeed::cli {

struct Measured {
  tune::Workload workload;
  loader::StorageTable storage;
  double cpu_mean_ms = 0;
  double step_mean_ms = 0;
  double memcpy_gb_per_s = 0;
  double mean_sample_bytes = 0;
  std::uint64_t dataset_bytes = 0;
};

struct MeasureRequest {
  loader::SampleSource* source = nullptr;
  const std::vector<loader::SampleInfo>* samples = nullptr;
  loader::SampleTransform* transform = nullptr;
  loader::StepRunner* step = nullptr;  // timed when the step is a model
  tune::Distribution step_ms;          // used when step is null
  int batch_size = 32;
  int max_concurrency = 64;            // ranks x the most workers tried
  double seconds_per_level = 1.5;
  std::function<void(const std::string&)> progress;
  const std::atomic<bool>* stop = nullptr;
};

Measured measure_for_tune(const MeasureRequest& r);

// A simulated step's distribution from --step-ms ("45" or "45:3").
tune::Distribution step_distribution_from(const std::string& step_ms);

}  // namespace gpufeed::cli
