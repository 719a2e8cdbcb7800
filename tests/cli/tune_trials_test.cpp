// The built-in trial target sizes its trials in steps: the warm-up
// (prefetch x workers batches) is left out, then the steady steps asked
// are measured, on a fast step and a slow one alike; the seconds cap cuts a
// trial short only when the steps do not fit it, and the trial says so.
#include <gtest/gtest.h>

#include <atomic>

#include "gpufeed/loader/synthetic_source.hpp"
#include "gpufeed/loader/basic_steps.hpp"
#include "tune_trials.hpp"

namespace gpufeed {
namespace {

struct Target {
  std::unique_ptr<loader::SampleSource> source =
      loader::make_synthetic_source(loader::parse_synthetic_spec("synthetic:memory,samples=4096,size=1KiB"));
  std::vector<loader::SampleInfo> samples = source->list();
  std::unique_ptr<loader::SampleTransform> transform = loader::make_copy_transform(1024);
  std::atomic<bool> stop{false};
  cli::BuiltinTrialRunner runner(const std::string& step_ms, int batch) {
    app::BuiltinTrialSetup s;
    s.source = source.get();
    s.samples = &samples;
    s.transform = transform.get();
    s.device = loader::DeviceChoice::Host;
    s.step_ms = step_ms;
    s.batch_size = batch;
    s.stop = &stop;
    return cli::BuiltinTrialRunner(s);
  }
};

// One trial of `c` for `length` on a step of `step_ms` and `batch` samples.
tune::Trial run_trial(const std::string& step_ms, int batch, const tune::Candidate& c,
                      const tune::TrialLength& length) {
  Target t;
  auto runner = t.runner(step_ms, batch);
  return runner.run(c, length);
}

TEST(TrialLength, AFastStepsTrialMeasuresItsStepsAfterTheWarmUp) {
  const tune::Trial trial = run_trial("10", 16, {2, 2, false}, {30, 60});
  ASSERT_TRUE(trial.ok) << trial.note;
  EXPECT_EQ(trial.steady_steps, 30);
  EXPECT_FALSE(trial.capped) << trial.note;
  // 4 warm-up batches and 30 steps of 10 ms: about a third of a second.
  EXPECT_GE(trial.seconds, 0.3);
  EXPECT_LT(trial.seconds, 10.0);
  EXPECT_NEAR(trial.samples_per_s, 16 / 0.010, 0.15 * 16 / 0.010) << "fed: a batch a step";
}

TEST(TrialLength, ASlowStepsTrialRunsAsManyStepsNotAsManySeconds) {
  const tune::Trial trial = run_trial("550", 64, {1, 1, false}, {3, 60});
  ASSERT_TRUE(trial.ok) << trial.note;
  EXPECT_EQ(trial.steady_steps, 3);
  EXPECT_FALSE(trial.capped);
  EXPECT_GE(trial.seconds, 4 * 0.55 - 0.05) << "one warm-up batch and three steps of 550 ms";
  EXPECT_NEAR(trial.samples_per_s, 64 / 0.55, 0.15 * 64 / 0.55);
}

TEST(TrialLength, TheCapCutsATrialShortAndTheTrialSaysSo) {
  const tune::Trial trial = run_trial("200", 8, {1, 1, false}, {50, 1.5});
  ASSERT_TRUE(trial.ok) << trial.note;
  EXPECT_TRUE(trial.capped);
  EXPECT_LT(trial.steady_steps, 50);
  EXPECT_LT(trial.seconds, 3.0);
  EXPECT_NE(trial.note.find("1.5 s cap"), std::string::npos) << trial.note;
}

}  // namespace
}  // namespace gpufeed
