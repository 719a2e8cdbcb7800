#pragma once
// `gpufeed tune` as one call: budget, measure, model, verify, choose
// (docs/tune.md). The CLI file turns options into a TuneRequest.
#include <string>
#include <vector>

#include "app.hpp"
#include "bench_setup.hpp"
#include "context.hpp"
#include "gpufeed/tune/config.hpp"

namespace gpufeed::cli {

struct TuneRequest {
  DataOptions data;
  WorkOptions work;
  DeviceOptions device;
  int batch_size = 32;
  int gpus = 0;               // ranks on this node; 0: the GPUs found (at least 1)
  std::string search = "model";
  double budget_s = 0;
  double trial_s = 10;
  double first_round_s = 4;
  double tolerance = 0.02;
  double measure_level_s = 1.5;  // per storage concurrency level
  std::string mem_budget;     // per rank; empty: probe's prefetch budget
  bool bind = false;
  int max_workers = 0;        // 0: from the budget
  bool both_pin = false;      // also try pin_memory=False
  std::string from;           // a gpufeed.diagnosis/v1 file: the step measured on the real job
  std::string step_source;    // set from --from: where the step came from, for the report and config
  double job_cpu_ms = 0;      // set from --from: CPU the job's workers spent per sample (0: unknown)
  double loop_cpu_ms_per_sample = 0;  // set from --from: CPU the job's loop process spent per sample
  bool pytorch_probe = false; // the built-in target priced as a stock PyTorch pipeline (pytorch_probe.hpp)
  std::string python;         // the probe's Python; empty: default_python()
  std::string exec;           // target: the user's job
  std::string metric_regex = "samples/s: ([0-9.]+)";
  std::string metric = "output";  // or "data-wait": the job's loop traced (eBPF)
  std::string out = "gpufeed-config.json";
  std::string emit;           // "python"
  bool simulate = false;
  std::vector<std::string> profiles;
  bool quiet = false;
  bool verbose = false;
};

// Runs the whole tune and writes the config; returns the exit code.
int run_tune(const TuneRequest& request, Context& ctx);

}  // namespace gpufeed::cli
