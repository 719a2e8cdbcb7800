#pragma once
// The two trial targets of `gpufeed tune`: the built-in loader (all ranks of
// the node at once, sharing the store and the cores) and the user's own job
// (a command template run per trial, its throughput read from its output).
#include <atomic>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/loader/device_backend.hpp"
#include "gpufeed/loader/pipeline.hpp"
#include "gpufeed/loader/sample_source.hpp"
#include "gpufeed/loader/step.hpp"
#include "gpufeed/loader/transform.hpp"
#include "gpufeed/tune/search.hpp"

namespace gpufeed::cli {

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
  const std::atomic<bool>* stop = nullptr;
};

class BuiltinTrialRunner final : public tune::TrialRunner {
 public:
  explicit BuiltinTrialRunner(BuiltinTrialSetup setup) : setup_(std::move(setup)) {}
  tune::Trial run(const tune::Candidate& c, double seconds) override;

 private:
  BuiltinTrialSetup setup_;
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
};

// A trial that Ctrl-C (SIGINT/SIGTERM: `stop`) cut short is no measurement:
// marks it failed and says so; false when it ran to its end.
bool interrupted(tune::Trial& trial, const std::atomic<bool>* stop);

// Fills the placeholders; a usage error for an unknown one.
std::string expand_command(const std::string& command, const tune::Candidate& c, int batch_size);

class ExecTrialRunner final : public tune::TrialRunner {
 public:
  explicit ExecTrialRunner(ExecTrialSetup setup);
  tune::Trial run(const tune::Candidate& c, double seconds) override;
  // --metric data-wait: the job's step its trials timed (the median), else
  // the hint; 0 when neither. The config keeps it for check.
  double known_step_ms() const;

 private:
  // --metric data-wait: the trial's figure from its trace.
  void read_wait_metric(tune::Trial& trial, const Evidence& traced, bool out_of_time, bool job_failed,
                        bool interrupted, const std::string& output);

  ExecTrialSetup setup_;
  std::regex metric_;
  std::vector<double> steps_ms_;  // the job's step, from each trial whose loop's waits timed it
};

}  // namespace gpufeed::cli
