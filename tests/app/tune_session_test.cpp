// `gpufeed tune`'s session on fakes of its ports: no probe, no store, no
// trial touches the machine. This suite links the app and core libraries
// only, so an adapter creeping into the session fails to link.
#include "gpufeed/app/tune_session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "gpufeed/error.hpp"
#include "gpufeed/loader/basic_steps.hpp"
#include "gpufeed/loader/synthetic_source.hpp"

namespace gpufeed::app {
namespace {

// A trial target whose throughput follows Little's law for the fake store:
// each worker delivers one sample per `sample_ms`, the step takes `step_ms`
// per batch. Scripted faults: configs that fail, Ctrl-C after some trials.
class FakeRunner final : public JobTrialRunner {
 public:
  struct Script {
    double sample_ms = 10;
    double step_ms = 20;
    int batch = 16;
    std::vector<int> failing_workers;  // these worker counts fail
    int stop_after = -1;               // raise `stop` during this many-th trial (0-based); -1: never
    bool stop_ends_trial_early = true; // that trial is then cut short (not a measurement)
    std::atomic<bool>* stop = nullptr;
    double seconds_per_trial = 0;      // the fake clock's advance per trial
    double* clock = nullptr;
    double cpu_ms = 0;                 // CPU per sample on the fake's 2 cores (0: none)
    double repeat_factor = 1;          // a config's later full trials read this much of its first
  };
  explicit FakeRunner(Script script, std::vector<tune::Candidate>* log) : s_(std::move(script)), log_(log) {}

  tune::Trial run(const tune::Candidate& c, const tune::TrialLength& length) override {
    log_->push_back(c);
    if (lengths) lengths->push_back(length);
    tune::Trial t;
    t.candidate = c;
    t.seconds = length.max_seconds;
    t.steady_steps = length.steps;
    if (s_.clock) *s_.clock += s_.seconds_per_trial;
    const int index = static_cast<int>(log_->size()) - 1;
    if (index == s_.stop_after && s_.stop) {
      s_.stop->store(true);
      if (s_.stop_ends_trial_early) {
        t.ok = false;
        t.note = "interrupted";
        return t;
      }
    }
    if (std::find(s_.failing_workers.begin(), s_.failing_workers.end(), c.workers) != s_.failing_workers.end()) {
      t.ok = false;
      t.note = "the job failed";
      return t;
    }
    const double fed = s_.batch / s_.step_ms * 1000;
    double supplied = c.workers / (s_.sample_ms + s_.cpu_ms) * 1000;
    if (s_.cpu_ms > 0) {
      supplied = std::min(supplied, 2 * 1000 / s_.cpu_ms);  // the cores
      t.transform_cpu_ms = s_.cpu_ms;
      t.transform_samples = 1000;
    }
    t.samples_per_s = std::min(fed, supplied);
    if (length.max_seconds == full_seconds && ++full_runs[c.workers * 100 + c.prefetch_factor] > 1) {
      t.samples_per_s *= s_.repeat_factor;
    }
    t.starvation = 1 - t.samples_per_s / fed;
    return t;
  }
  std::vector<tune::TrialLength>* lengths = nullptr;  // where each trial's length is recorded (none: not)
  double full_seconds = -1;  // the request's full-trial cap: a config's repeats are told by it
  std::map<int, int> full_runs;
  double known_step_ms() const override { return s_.step_ms; }

 private:
  Script s_;
  std::vector<tune::Candidate>* log_;
};

class FakePlatform final : public TunePlatform {
 public:
  FakeRunner::Script script;
  std::vector<tune::Candidate> trials;
  std::vector<tune::TunedConfig> written;
  double clock = 0;
  bool stop_while_measuring = false;
  loader::AccessPattern measured_access{-1, -1};
  std::atomic<bool>* stop = nullptr;

  TuneBudget budget(const TuneRequest&) override {
    TuneBudget b;
    b.ranks = 1;
    b.worker_cores = 2;
    b.mem_per_rank = 1ULL << 30;
    b.bindings.push_back({0, "", std::nullopt, "0-1"});
    b.machine.hostname = "fake";
    return b;
  }
  std::unique_ptr<loader::SampleSource> open_store(const TuneRequest&) override {
    return loader::make_synthetic_source(loader::parse_synthetic_spec("synthetic:memory,samples=256"));
  }
  std::vector<loader::SampleInfo> list(loader::SampleSource& source, bool) override { return source.list(); }
  std::unique_ptr<loader::SampleTransform> transform(const WorkOptions&, const std::vector<loader::SampleInfo>&) override {
    return loader::make_cpu_cost_transform(4096, 0);
  }
  std::unique_ptr<loader::StepRunner> model_step(const DeviceOptions&) override { return nullptr; }
  Measured measure(const MeasureRequest& r) override {
    if (stop_while_measuring && stop) stop->store(true);
    Measured m;
    // The store the fake runner plays: a sample every sample_ms per worker.
    for (int c : {1, 4, 16, 64, 256}) m.workload.storage.levels.push_back({c, tune::Distribution::constant(script.sample_ms)});
    m.workload.cpu_ms = tune::Distribution::constant(script.cpu_ms > 0 ? script.cpu_ms : 0.01);
    measured_access = r.access;
    m.workload.step_ms = tune::Distribution::constant(script.step_ms);
    m.workload.batch_size = r.batch_size;
    m.workload.batch_bytes = 4096.0 * r.batch_size;
    m.cpu_mean_ms = script.cpu_ms > 0 ? script.cpu_ms : 0.01;
    m.step_mean_ms = script.step_ms;
    m.dataset_bytes = 256 * 4096;
    m.mean_sample_bytes = 4096;
    return m;
  }
  tune::PytorchCosts probe_pytorch(const PytorchProbeRequest&) override {
    ADD_FAILURE() << "the PyTorch probe runs only for --pytorch-probe";
    return {};
  }
  std::string default_python() override { return "python3"; }
  std::unique_ptr<tune::TrialRunner> builtin_runner(const BuiltinTrialSetup& setup) override {
    builtin_setup = setup;
    auto runner = std::make_unique<FakeRunner>(script, &trials);
    runner->full_seconds = full_seconds;
    runner->lengths = &lengths;
    return runner;
  }
  BuiltinTrialSetup builtin_setup;
  double full_seconds = 2;  // request()'s trial_s
  std::vector<tune::TrialLength> lengths;  // every built-in trial's
  std::unique_ptr<JobTrialRunner> job_runner(const ExecTrialSetup& setup) override {
    job_setup = setup;
    return std::make_unique<FakeRunner>(script, &trials);
  }
  ExecTrialSetup job_setup;
  tune::ScratchSpace scratch_space() override { return {"/scratch", 0}; }
  void write_config(const TuneRequest&, const tune::TunedConfig& config) override { written.push_back(config); }
  double seconds_since_start() override { return clock; }
};

class RecordingReporter final : public TuneReporter {
 public:
  std::vector<int> phases;
  std::vector<std::string> lines;
  void phase(int n, const std::string&) override { phases.push_back(n); }
  void line(const std::string& text) override { lines.push_back(text); }
  void progress(const std::string&) override {}
  void clear() override {}
  bool said(const std::string& words) const {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(words) != std::string::npos; });
  }
};

TuneRequest request() {
  TuneRequest r;
  r.data.data = "synthetic:memory";
  r.batch_size = 16;
  r.device.step_ms = "20";
  r.device.device = "host";
  r.trial_s = 2;
  r.first_round_s = 1;
  return r;
}

struct Fixture : ::testing::Test {
  FakePlatform platform;
  RecordingReporter reporter;
  std::atomic<bool> stop{false};
  void SetUp() override {
    platform.stop = &stop;
    platform.script.stop = &stop;
    platform.script.clock = &platform.clock;
  }
  tune::TunedConfig run(const TuneRequest& r = request()) { return run_tune_session(r, platform, reporter, &stop); }
};

using TuneSession = Fixture;

TEST_F(TuneSession, ThePhasesRunInOrderAndTheChosenConfigIsWrittenOnce) {
  const tune::TunedConfig config = run();
  EXPECT_EQ(reporter.phases, (std::vector<int>{1, 2, 3, 4, 5}));
  ASSERT_EQ(platform.written.size(), 1U);
  EXPECT_FALSE(config.partial);
  EXPECT_FALSE(platform.trials.empty());
  EXPECT_EQ(config.workload.target, "loader");
  // 16 samples a 20 ms step need 800 samples/s; at 10 ms a sample, 8 workers
  // feed it and fewer do not: the cheapest fed config.
  EXPECT_EQ(config.chosen.workers, 8);
  EXPECT_GT(config.prediction.samples_per_s, 0);
  EXPECT_LE(config.prediction.low, config.prediction.samples_per_s);
  EXPECT_GE(config.prediction.high, config.prediction.samples_per_s);
}

TEST_F(TuneSession, CtrlCAfterAFinishedTrialWritesTheBestSoFarMarkedPartial) {
  platform.script.stop_after = 2;
  const tune::TunedConfig config = run();
  ASSERT_EQ(platform.written.size(), 1U);
  EXPECT_TRUE(config.partial);
  EXPECT_EQ(platform.trials.size(), 3U) << "no trial starts after Ctrl-C";
  EXPECT_TRUE(reporter.said("stopped early"));
  const auto interrupted = std::find_if(config.trials.begin(), config.trials.end(),
                                        [](const tune::Trial& t) { return !t.ok; });
  ASSERT_NE(interrupted, config.trials.end());
  EXPECT_FALSE(config.chosen == interrupted->candidate && platform.trials.size() == 1)
      << "the cut-short trial is not the choice";
}

TEST_F(TuneSession, CtrlCBeforeAnyTrialFinishedWritesNothing) {
  platform.script.stop_after = 0;
  try {
    run();
    FAIL() << "tune wrote a config from no measurement";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_NE(std::string(e.what()).find("before any trial finished"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(platform.written.empty());
}

TEST_F(TuneSession, CtrlCWhileMeasuringWritesNothingAndRunsNoTrial) {
  platform.stop_while_measuring = true;
  EXPECT_THROW(run(), Error);
  EXPECT_TRUE(platform.written.empty());
  EXPECT_TRUE(platform.trials.empty());
  EXPECT_EQ(reporter.phases, (std::vector<int>{1, 2}));
}

TEST_F(TuneSession, AFailedTrialIsNeverTheChoice) {
  platform.script.failing_workers = {8};
  const tune::TunedConfig config = run();
  EXPECT_NE(config.chosen.workers, 8);
  EXPECT_TRUE(std::any_of(config.trials.begin(), config.trials.end(), [](const tune::Trial& t) { return !t.ok; }));
}

TEST_F(TuneSession, EveryTrialFailingIsAnErrorThatSaysWhy) {
  platform.script.failing_workers = {1, 2, 3, 4, 6, 8};
  try {
    run();
    FAIL() << "a config from failed trials";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("every trial failed: the job failed"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(platform.written.empty());
}

TEST_F(TuneSession, ABudgetThatRunsOutEndsTheSearchWithTheBestSoFar) {
  const std::size_t unbounded = [&] {
    FakePlatform free_run;
    free_run.script.clock = &free_run.clock;
    RecordingReporter quiet;
    run_tune_session(request(), free_run, quiet, nullptr);
    return free_run.trials.size();
  }();
  TuneRequest r = request();
  r.budget_s = 5;
  platform.script.seconds_per_trial = 2;  // the fake clock: 2 s a trial
  const tune::TunedConfig config = run(r);
  EXPECT_TRUE(config.partial);
  EXPECT_LT(platform.trials.size(), unbounded);
  EXPECT_LE(platform.clock, 5 + 2) << "no trial starts that the budget cannot hold";
  ASSERT_EQ(platform.written.size(), 1U);
}

TEST_F(TuneSession, AJobTargetRecordsItsCommandAndStep) {
  TuneRequest r = request();
  r.exec = "python train.py --workers {num_workers}";
  r.metric = "data-wait";
  r.metric_regex = TuneRequest{}.metric_regex;
  const tune::TunedConfig config = run(r);
  EXPECT_EQ(config.workload.target, "exec");
  EXPECT_EQ(config.workload.exec, r.exec);
  EXPECT_EQ(config.workload.metric, "data-wait");
  EXPECT_DOUBLE_EQ(config.workload.data_wait_step_ms, 20.0);
}

// A job's first trial is sized by the model (job_pacing.hpp): the runner
// is given the model's rate for each candidate, none for one the model
// never priced.
TEST_F(TuneSession, AJobsTrialsAreGivenTheModelsRate) {
  TuneRequest r = request();
  r.exec = "python train.py --workers {num_workers} --steps {steps}";
  run(r);
  ASSERT_TRUE(platform.job_setup.model_rate);
  // 10 ms a sample per worker, a 20 ms step of 16: 2 workers supply about
  // 200 samples/s, 8 are fed at 800.
  const double two = platform.job_setup.model_rate({2, 2, true});
  EXPECT_GT(two, 150);
  EXPECT_LT(two, 250);
  EXPECT_NEAR(platform.job_setup.model_rate({8, 2, true}), 800, 80);
  EXPECT_EQ(platform.job_setup.model_rate({9999, 2, true}), 0) << "a config outside the space has no model figure";
}

// I/O-bound workers: a sample takes 100 ms of waiting, so feeding 800
// samples/s takes 80 workers, ten times 4 per core on the fake's 2 cores.
TEST_F(TuneSession, TheSpaceGrowsPastFourPerCoreWhileWorkersAreIoBound) {
  platform.script.sample_ms = 100;
  const tune::TunedConfig config = run();
  EXPECT_TRUE(reporter.said("past 4 per core")) << "the model's space grew";
  EXPECT_EQ(config.chosen.workers, 96) << "the cheapest fed config: 64 workers supply 640 of the 800 samples/s";
  EXPECT_GE(config.space_workers_max, 96);
  EXPECT_EQ(config.worker_cap, 256);
  EXPECT_FALSE(config.limited_by_cap);
}

TEST_F(TuneSession, TheUsersCapIsReportedWhenItLimitsTheResult) {
  platform.script.sample_ms = 100;
  TuneRequest r = request();
  r.max_workers = 24;
  const tune::TunedConfig config = run(r);
  EXPECT_EQ(config.chosen.workers, 24);
  EXPECT_TRUE(config.limited_by_cap);
  EXPECT_EQ(config.worker_cap_because, "max_workers");
  EXPECT_TRUE(reporter.said("the cap limited the result")) << "the report names the cap";
}

// CPU-bound workers: 10 ms of CPU per sample on 2 cores give 200 samples/s
// whatever the workers; more than 4 per core only contend for the cores.
TEST_F(TuneSession, ACpuBoundWorkloadsSpaceDoesNotGrow) {
  platform.script.sample_ms = 0.1;
  platform.script.cpu_ms = 10;
  const tune::TunedConfig config = run();
  EXPECT_LE(config.space_workers_max, 8) << "4 per core on 2 cores";
  EXPECT_LE(config.chosen.workers, 4);
  for (const auto& c : platform.trials) EXPECT_LE(c.workers, 8);
}

TEST_F(TuneSession, TrialsAreSizedInStepsWithTheSecondsAsTheirCap) {
  TuneRequest r = request();
  r.trial_steps = 50;
  r.short_steps = 12;
  run(r);
  ASSERT_FALSE(platform.lengths.empty());
  for (const auto& l : platform.lengths) {
    EXPECT_TRUE((l == tune::TrialLength{50, r.trial_s}) || (l == tune::TrialLength{12, r.first_round_s}))
        << l.steps << " steps, " << l.max_seconds << " s";
  }
}

TEST_F(TuneSession, TheChosenConfigIsRepeatedAndItsIntervalComesFromTheRepeats) {
  const tune::TunedConfig config = run();
  int full_of_chosen = 0;
  for (const auto& t : config.trials) full_of_chosen += t.round == 2 && t.candidate == config.chosen && t.ok;
  EXPECT_GE(full_of_chosen, 2);
  EXPECT_TRUE(config.prediction.interval_given);
  // 8 workers feed the 20 ms step: 800 samples/s is all the step allows.
  EXPECT_LE(config.prediction.high, 800.0 + 1e-6);
}

TEST_F(TuneSession, ThinEvidenceGivesNoIntervalAndSaysWhyInWords) {
  platform.script.repeat_factor = 0.4;  // the repeat reads 60% below the first trial
  const tune::TunedConfig config = run();
  EXPECT_FALSE(config.prediction.interval_given);
  EXPECT_DOUBLE_EQ(config.prediction.low, 0);
  EXPECT_DOUBLE_EQ(config.prediction.high, 0);
  EXPECT_TRUE(reporter.said("no interval: ")) << "said in words";
  EXPECT_NE(config.prediction.interval_because.find("too noisy"), std::string::npos) << config.prediction.interval_because;
}

TEST_F(TuneSession, TheAccessPatternIsTheStoresUnlessGiven) {
  run();
  EXPECT_EQ(platform.measured_access, (loader::AccessPattern{0, 0})) << "a synthetic store reads without a stat";
  EXPECT_EQ(platform.builtin_setup.access, (loader::AccessPattern{0, 0}));
  TuneRequest r = request();
  r.access = "stat-open-read";
  const tune::TunedConfig config = run(r);
  EXPECT_EQ(platform.measured_access, (loader::AccessPattern{1, 0}));
  EXPECT_EQ(platform.builtin_setup.access, (loader::AccessPattern{1, 0})) << "the trials replay it";
  EXPECT_EQ(config.workload.stats_per_sample, 1) << "and check replays it";
}

}  // namespace
}  // namespace gpufeed::app
