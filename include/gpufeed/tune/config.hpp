#pragma once
// The config `tune` writes and `check` reads (schema gpufeed.config/v1,
// docs/tune.md): DataLoader keyword arguments a PyTorch job can use as they
// are, per-rank CPU binding, justified environment variables and cache
// advice, the prediction with its interval, the trials behind it and the
// machine it was measured on.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/document.hpp"
#include "gpufeed/tune/search.hpp"

namespace gpufeed::tune {

struct RankBinding {
  int rank = 0;
  std::string gpu;                // PCI bus id; empty on a CPU-only host
  std::optional<int> numa_node;
  std::string worker_cpus;        // cpulist for this rank's workers
};

// An environment variable, set only because a measurement here says so.
struct EnvAdvice {
  std::string name;
  std::string value;
  std::string because;  // names the measurement
};

struct CacheAdvice {
  std::string tier;              // "memory" or "ssd"
  std::uint64_t bytes = 0;
  std::uint64_t samples = 0;     // memory tier: samples held
  double share_of_dataset = 0;   // ssd tier: fraction of the dataset
  double predicted_gain = 0;     // predicted samples/s with the tier / without
  std::string because;
};

struct PredictionBand {
  double samples_per_s = 0;       // per rank
  double low = 0, high = 0;       // interval
  double node_samples_per_s = 0;
  double starvation = 0;
  double model_samples_per_s = 0; // the model's figure, scaled by how it fared on the other configs' trials
  double model_raw_samples_per_s = 0;  // the simulation's own figure
  // How the calibration fitted the model (calibration.hpp); 0 trials: raw.
  double sample_factor = 1, step_factor = 1;
  int calibration_trials = 0;
  std::string interval_because = "";  // what set the interval's width, or why none is given (search.hpp: repeat_interval)
  bool interval_given = true;         // false: the evidence was too thin (low and high are 0; JSON null)
};

struct MachineFingerprint {
  std::string hostname;
  std::string cpu_model;
  int cpus = 0;
  std::uint64_t memory_bytes = 0;
  std::vector<std::string> gpus;
  std::string kernel;
};

struct WorkloadRecord {
  std::string target = "loader";  // "loader" or "exec"
  std::string data;               // the dataset as given (no credentials)
  std::string exec;               // the command template, for target exec
  std::string metric_regex;       // where the exec job prints its throughput
  std::string step;               // "simulated step 45 ms", a model, or "from diagnosis"
  std::string step_ms;            // the trials' step (sleep), to re-measure
  double step_cpu_ms = 0;         // CPU the trials' loop spun before each sleep (tune --from)
  std::string decode = "none";
  bool full_decode = false;       // --decode jpeg at full size
  std::string filter = "fast";    // --decode jpeg resize filter
  std::string crop = "center";    // --decode jpeg crop mode
  double cpu_us = 0;
  double cpu_scale = 1;            // each sample's CPU multiplied (tune --pytorch-probe's trials)
  int image_size = 224;
  std::uint64_t sample_bytes = 0; // per sample in the batch
  int ranks = 1;
  // How the exec job's throughput was read: "output" (metric_regex) or
  // "data-wait" (its loop's waits, traced); empty for the other targets.
  std::string metric;
  // data-wait: the job's step its trials timed (else --step-ms), which a
  // fed loop is priced by; check prices it the same way. 0: none.
  double data_wait_step_ms = 0;
  // What each sample's fetch called (loader::AccessPattern), so that check
  // replays it: stat(2)s and extra open(2)s before the read.
  int stats_per_sample = 0;
  int extra_opens_per_sample = 0;
};

struct TunedConfig {
  int batch_size = 32;
  bool drop_last = true;
  bool persistent_workers = true;
  Candidate chosen;
  std::vector<RankBinding> ranks;
  std::vector<EnvAdvice> environment;
  std::vector<CacheAdvice> cache;
  PredictionBand prediction;
  std::vector<Trial> trials;
  std::string search = "model";
  double search_wall_s = 0;
  double grid_equivalent_s = 0;   // what a grid of full trials over the space would take
  int space_workers_max = 0;      // the widest worker count the space reached
  int worker_cap = 0;             // the most the space could grow to (search.hpp: WorkerCap)
  std::string worker_cap_because;
  bool limited_by_cap = false;    // the best config sat at the cap
  std::string reason;
  std::uint64_t pinned_bytes_per_rank = 0;
  MachineFingerprint machine;
  WorkloadRecord workload;
  bool partial = false;           // written on Ctrl-C or budget: best so far
};

// The body of a gpufeed.config/v1 document (make_document adds the envelope).
Json to_json(const TunedConfig& config);
// Reads a document; a usage error naming the file for anything malformed and
// for a schema other than gpufeed.config/v1 (naming it).
TunedConfig config_from_json(const Json& document, const std::string& source);

// `--emit python`: a snippet with the DataLoader arguments and a
// worker_init_fn that binds each worker to its rank's CPUs.
std::string emit_python(const TunedConfig& config);

}  // namespace gpufeed::tune
