#pragma once
// The two trial targets of `gpufeed tune`: the built-in loader (all ranks of
// the node at once, sharing the store and the cores) and the user's own job
// (a command template run per trial, its throughput read from its output).
#include <atomic>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "gpufeed/app/tune_session.hpp"
#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/loader/device_backend.hpp"
#include "gpufeed/loader/pipeline.hpp"
#include "gpufeed/tune/job_pacing.hpp"
#include "gpufeed/loader/sample_source.hpp"
#include "gpufeed/loader/step.hpp"
#include "gpufeed/loader/transform.hpp"
#include "gpufeed/tune/search.hpp"

namespace gpufeed::cli {

using app::BuiltinTrialSetup;
using app::ExecTrialSetup;

class BuiltinTrialRunner final : public tune::TrialRunner {
 public:
  explicit BuiltinTrialRunner(BuiltinTrialSetup setup) : setup_(std::move(setup)) {}
  tune::Trial run(const tune::Candidate& c, const tune::TrialLength& length) override;

 private:
  BuiltinTrialSetup setup_;
};


// A trial that Ctrl-C (SIGINT/SIGTERM: `stop`) cut short is no measurement:
// marks it failed and says so; false when it ran to its end.
bool interrupted(tune::Trial& trial, const std::atomic<bool>* stop);

// A trial's warm-up: prefetch x workers batches (the queue filled once).
std::uint64_t warmup_batches(const tune::Candidate& c);

// Fills the placeholders ({steps}: the trial's warm-up plus its steady
// steps); a usage error for an unknown one.
std::string expand_command(const std::string& command, const tune::Candidate& c, int batch_size,
                           std::uint64_t steps = 0);

class ExecTrialRunner final : public app::JobTrialRunner {
 public:
  explicit ExecTrialRunner(ExecTrialSetup setup);
  tune::Trial run(const tune::Candidate& c, const tune::TrialLength& length) override;
  double known_step_ms() const override;

  // What the trials so far learned of how the job reports (tune --exec
  // sizes later trials from it).
  const tune::JobPacing& pacing() const { return pacing_; }

 private:
  // --metric data-wait: the trial's figure from its trace.
  void read_wait_metric(tune::Trial& trial, const Evidence& traced, bool out_of_time, bool job_failed,
                        bool interrupted, const std::string& output);

  ExecTrialSetup setup_;
  std::regex metric_;
  std::vector<double> steps_ms_;  // the job's step, from each trial whose loop's waits timed it
  tune::JobPacing pacing_;
};

}  // namespace gpufeed::cli
