#pragma once
// The machine `gpufeed tune`'s session runs on (app/tune_session.hpp): probe's
// budget, the store, the transform and step, phase 2's measurements, the
// PyTorch probe, the two trial targets, the scratch disk, the config's
// output, and the clock.
#include <chrono>

#include "context.hpp"
#include "gpufeed/app/tune_session.hpp"
#include "progress_line.hpp"

namespace gpufeed::cli {

class CliTunePlatform final : public app::TunePlatform {
 public:
  explicit CliTunePlatform(Context& ctx) : ctx_(ctx), start_(std::chrono::steady_clock::now()) {}
  app::TuneBudget budget(const app::TuneRequest& r) override;
  std::unique_ptr<loader::SampleSource> open_store(const app::TuneRequest& r) override;
  std::vector<loader::SampleInfo> list(loader::SampleSource& source, bool quiet) override;
  std::unique_ptr<loader::SampleTransform> transform(const app::WorkOptions& work,
                                                     const std::vector<loader::SampleInfo>& samples) override;
  std::unique_ptr<loader::StepRunner> model_step(const app::DeviceOptions& device) override;
  app::Measured measure(const app::MeasureRequest& request) override;
  tune::PytorchCosts probe_pytorch(const app::PytorchProbeRequest& request) override;
  std::string default_python() override;
  std::unique_ptr<tune::TrialRunner> builtin_runner(const app::BuiltinTrialSetup& setup) override;
  std::unique_ptr<app::JobTrialRunner> job_runner(const app::ExecTrialSetup& setup) override;
  tune::ScratchSpace scratch_space() override;
  void write_config(const app::TuneRequest& r, const tune::TunedConfig& config) override;
  double seconds_since_start() override;

 private:
  Context& ctx_;
  std::chrono::steady_clock::time_point start_;
};

// Phase lines go to stdout as they happen; trial progress redraws on a TTY.
class CliTuneReporter final : public app::TuneReporter {
 public:
  CliTuneReporter(Context& ctx, bool quiet) : ctx_(ctx), quiet_(quiet), progress_(ctx.io.err, ctx.io.err_is_tty && !quiet) {}
  void phase(int n, const std::string& title) override;
  void line(const std::string& text) override;
  void progress(const std::string& text) override;
  void clear() override;

 private:
  Context& ctx_;
  bool quiet_;
  ProgressLine progress_;
};

// The config document, to --out (or stdout for '-').
void write_tune_config(const app::TuneRequest& r, Context& ctx, const tune::TunedConfig& config);

}  // namespace gpufeed::cli
