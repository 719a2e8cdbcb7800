#pragma once
// `gpufeed tune` as an application session (docs/tune.md): five phases -
// budget, measure, model, verify, choose - that return values, driven
// through the ports below. The session holds the policy; the ports hold the
// machine (probe, the store, the trials, the clock, the output), so unit
// tests drive the whole session with fakes (tests/app/tune_session_test.cpp)
// and the CLI wires the real adapters (src/cli/tune_platform.cpp).
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/app/loader_options.hpp"
#include "gpufeed/loader/device_backend.hpp"
#include "gpufeed/loader/sample_source.hpp"
#include "gpufeed/loader/step.hpp"
#include "gpufeed/loader/storage_table.hpp"
#include "gpufeed/loader/transform.hpp"
#include "gpufeed/tune/advice.hpp"
#include "gpufeed/tune/config.hpp"
#include "gpufeed/tune/dataloader_model.hpp"
#include "gpufeed/tune/pytorch_probe.hpp"
#include "gpufeed/tune/search.hpp"

namespace gpufeed::app {

struct TuneRequest {
  DataOptions data;
  WorkOptions work;
  DeviceOptions device;
  int batch_size = 32;
  int gpus = 0;               // ranks on this node; 0: the GPUs found (at least 1)
  std::string search = "model";
  double budget_s = 0;
  // A trial's length in steady-state steps after its warm-up, and the cap
  // in seconds that is reported when it cuts one short (search.hpp: TrialLength).
  int trial_steps = 60;
  int short_steps = 20;
  double trial_s = 120;       // the cap of a full trial
  double first_round_s = 40;  // the cap of a short trial
  // --exec: the cap of the first trial, run to the job's first figure (its
  // start-up and reporting interval are unknown until then).
  double first_figure_s = 300;
  double tolerance = 0.02;
  double measure_level_s = 1.5;  // per storage concurrency level
  std::string mem_budget;     // per rank; empty: probe's prefetch budget
  bool bind = false;
  int max_workers = 0;        // 0: from the budget
  bool both_pin = false;      // also try pin_memory=False
  // What the job calls per sample: auto (the store's usual_access()),
  // stat-open-read or open-read; --from sets the counts the diagnosis saw.
  std::string access = "auto";
  std::optional<loader::AccessPattern> access_from;  // set from --from: the calls per file the job's workers made
  std::string from;           // a gpufeed.diagnosis/v1 file: the step measured on the real job
  std::string step_source;    // set from --from: where the step came from, for the report and config
  double job_cpu_ms = 0;      // set from --from: CPU the job's workers spent per sample (0: unknown)
  double loop_cpu_ms_per_sample = 0;  // set from --from: CPU the job's loop process spent per sample
  bool pytorch_probe = false; // the built-in target priced as a stock PyTorch pipeline (pytorch_probe.hpp)
  std::string python;         // the probe's Python; empty: the platform's default
  std::string exec;           // target: the user's job
  std::string metric_regex = "samples/s: ([0-9.]+)";
  std::string metric = "output";  // or "data-wait": the job's loop traced (eBPF)
  std::string out = "gpufeed-config.json";
  std::string emit;           // "python"
  bool simulate = false;
  std::vector<std::string> profiles;
  bool quiet = false;
};

// Phase 1: what this node gives each rank.
struct TuneBudget {
  int ranks = 1;
  double worker_cores = 1;
  std::uint64_t mem_per_rank = 0;
  std::vector<tune::RankBinding> bindings;
  std::vector<std::vector<int>> rank_cpus;
  tune::MachineFingerprint machine;
  std::vector<std::string> notes;
  std::uint64_t mem_available = 0;  // host memory free now (0: unknown): caps the workers
  std::uint64_t open_files = 0;     // the open-file limit (0: none known)
};

// Phase 2: what the model needs, measured on this machine.
struct MeasureRequest {
  loader::SampleSource* source = nullptr;
  const std::vector<loader::SampleInfo>* samples = nullptr;
  loader::SampleTransform* transform = nullptr;
  loader::StepRunner* step = nullptr;  // timed when the step is a model
  tune::Distribution step_ms;          // used when step is null
  int batch_size = 32;
  int max_concurrency = 64;            // ranks x the most workers tried
  loader::AccessPattern access;        // what the job calls per sample: the model's storage latency sums it
  double seconds_per_level = 1.5;
  std::function<void(const std::string&)> progress;
  const std::atomic<bool>* stop = nullptr;
};

struct Measured {
  tune::Workload workload;
  loader::StorageTable storage;
  double cpu_mean_ms = 0;
  double step_mean_ms = 0;
  double memcpy_gb_per_s = 0;
  double mean_sample_bytes = 0;
  std::uint64_t dataset_bytes = 0;
};

// --pytorch-probe: what a stock PyTorch pipeline costs per sample here.
struct PytorchProbeRequest {
  loader::SampleSource* source = nullptr;
  const std::vector<loader::SampleInfo>* samples = nullptr;
  std::string python;  // empty: /usr/bin/python3 when it exists, else python3 from PATH
  int batch_size = 32;
  int workers = 1;  // DataLoader workers, all kept busy
  int image_size = 224;
  std::string crop = "center";  // tune's --crop
  std::string filter = "fast";  // tune's --filter; a PIL pipeline resizes with bilinear for "fast"
  double seconds = 3;
  // The built-in transform, timed on `workers` threads in turns with the
  // probe (PytorchCosts::builtin_cpu_ms); none: the probe alone.
  loader::SampleTransform* transform = nullptr;
  double turn_s = 0.25;  // each turn of the probe, and of the built-in transform
  const std::atomic<bool>* stop = nullptr;
};

// Phase 4's targets: the built-in loader on every rank, or the user's job.
struct BuiltinTrialSetup {
  loader::SampleSource* source = nullptr;
  const std::vector<loader::SampleInfo>* samples = nullptr;
  loader::SampleTransform* transform = nullptr;
  loader::DeviceChoice device = loader::DeviceChoice::Host;
  std::string step_ms = "0";  // each rank gets its own simulated step
  double step_cpu_ms = 0;     // loop CPU before each step (tune --from)
  int ranks = 1;
  int batch_size = 32;
  std::vector<std::vector<int>> rank_cpus;  // empty: workers not bound
  std::uint64_t mem_budget_bytes = 0;
  loader::AccessPattern access{0, 0};       // the job's calls per sample, replayed by each worker
  const std::atomic<bool>* stop = nullptr;
};

struct ExecTrialSetup {
  std::string command;  // with {num_workers} {prefetch_factor} {pin_memory} {batch_size}
  std::string metric_regex;
  int batch_size = 32;
  const std::atomic<bool>* stop = nullptr;
  int ranks = 1;  // the job's ranks on this node: its CPU is read only when as many loops are found
  // A trial whose job has printed no figure when its time is up (still
  // starting: imports from a cold page cache, workers spawning) runs on, up
  // to this long, until its first figure and half its own time past it.
  // 0: no running on (check's single measurement).
  double most_seconds = 0;
  // --metric data-wait: no figure in the output; each trial traces the job's
  // loop with eBPF and reads its throughput from its waits for data
  // (tune/wait_metric.hpp). The step to price a fed loop by until a trial
  // has timed the job's own: --step-ms (0: none).
  bool data_wait = false;
  double step_ms_hint = 0;
  // The model's samples/s per rank for a candidate (0: none): how a job
  // that runs {steps} batches is sized before any trial has shown its rate.
  std::function<double(const tune::Candidate&)> model_rate;
};

// The user's job as a trial target; it also learns the job's step.
class JobTrialRunner : public tune::TrialRunner {
 public:
  // --metric data-wait: the job's step its trials timed (the median), else
  // the hint; 0 when neither. The config keeps it for check.
  virtual double known_step_ms() const = 0;
};

// The machine, as the session sees it.
class TunePlatform {
 public:
  virtual ~TunePlatform() = default;
  virtual TuneBudget budget(const TuneRequest& r) = 0;
  // The store, opened before phase 1 (a dataset that cannot be opened fails
  // before any phase runs), and listed in phase 2.
  virtual std::unique_ptr<loader::SampleSource> open_store(const TuneRequest& r) = 0;
  virtual std::vector<loader::SampleInfo> list(loader::SampleSource& source, bool quiet) = 0;
  virtual std::unique_ptr<loader::SampleTransform> transform(const WorkOptions& work,
                                                             const std::vector<loader::SampleInfo>& samples) = 0;
  // --model: the step to time; null for a simulated --step-ms.
  virtual std::unique_ptr<loader::StepRunner> model_step(const DeviceOptions& device) = 0;
  virtual Measured measure(const MeasureRequest& request) = 0;
  virtual tune::PytorchCosts probe_pytorch(const PytorchProbeRequest& request) = 0;
  virtual std::string default_python() = 0;
  virtual std::unique_ptr<tune::TrialRunner> builtin_runner(const BuiltinTrialSetup& setup) = 0;
  virtual std::unique_ptr<JobTrialRunner> job_runner(const ExecTrialSetup& setup) = 0;
  virtual tune::ScratchSpace scratch_space() = 0;  // where an SSD tier would go
  // Writes the config where --out says (and prints --emit's snippet).
  virtual void write_config(const TuneRequest& r, const tune::TunedConfig& config) = 0;
  virtual double seconds_since_start() = 0;        // the session's clock
};

// Phase lines as they happen, and a progress line redrawn in place.
class TuneReporter {
 public:
  virtual ~TuneReporter() = default;
  virtual void phase(int n, const std::string& title) = 0;
  virtual void line(const std::string& text) = 0;
  virtual void progress(const std::string& text) = 0;
  virtual void clear() = 0;
};

// Runs budget, measure, model, verify and choose, writes the config through
// the platform, and returns it. `stop` (Ctrl-C) ends the search with the
// best config so far; before any trial finished it is a runtime error and
// nothing is written.
tune::TunedConfig run_tune_session(const TuneRequest& request, TunePlatform& platform, TuneReporter& reporter,
                                   const std::atomic<bool>* stop);

// A simulated step's distribution from --step-ms ("45" or "45:3").
tune::Distribution step_distribution_from(const std::string& step_ms);

// "auto", "cuda", "hip", "host", "cpu"; a usage error otherwise.
loader::DeviceChoice parse_device(const std::string& text);

}  // namespace gpufeed::app
