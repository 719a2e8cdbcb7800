// The search on scripted measurements: which trials run, what wins and why.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>

#include "gpufeed/tune/search.hpp"

namespace gpufeed::tune {
namespace {

using Calls = std::vector<std::pair<Candidate, double>>;

// Throughput from a formula of the candidate; records every trial.
class ScriptedRunner final : public TrialRunner {
 public:
  explicit ScriptedRunner(std::function<double(const Candidate&)> f)
      : f_([f = std::move(f)](const Candidate& c, double) { return f(c); }) {}
  // A figure that also depends on the trial's length (short rounds read differently).
  explicit ScriptedRunner(std::function<double(const Candidate&, double)> f) : f_(std::move(f)) {}
  // The script tells the rounds apart by their caps (SearchOptions' short_round and full).
  Trial run(const Candidate& c, const TrialLength& length) override {
    const double seconds = length.max_seconds;
    calls.push_back({c, seconds});
    Trial t;
    t.samples_per_s = f_(c, seconds);
    t.seconds = seconds;
    t.ok = t.samples_per_s > 0;
    if (!t.ok) t.note = "failed";
    t.too_short = t.samples_per_s < 0;  // a script's -1: no figure within the trial's time
    return t;
  }
  Calls calls;

 private:
  std::function<double(const Candidate&, double)> f_;
};

std::vector<int> full_trial_workers(const Calls& calls, const SearchOptions& o) {
  std::vector<int> full;
  for (const auto& [c, seconds] : calls) {
    if (seconds == o.full.max_seconds) full.push_back(c.workers);
  }
  return full;
}

// `each` samples/s a worker, however many: no knee, prefetch does not matter.
std::function<double(const Candidate&)> per_worker(double each) {
  return [each](const Candidate& c) { return c.workers * each; };
}

// Saturates at 8 workers (1000/s), prefetch helps a little up to 4.
double plateau(const Candidate& c) {
  return std::min(c.workers, 8) * 125.0 * (c.prefetch_factor >= 4 ? 1.0 : 0.99);
}

std::vector<Prediction> predict(const SearchSpace& space, const std::function<double(const Candidate&)>& f) {
  std::vector<Prediction> out;
  for (const auto& c : space.candidates()) out.push_back({c, f(c), f(c), 0, 0, 0, 0});
  return out;
}

// model_search over `space` with `model`'s predictions and trials that read
// `truth`: what it chose, and every trial it ran.
struct ScriptedSearch : SearchResult {
  Calls calls;
};
ScriptedSearch scripted_search(const SearchSpace& space, const std::function<double(const Candidate&)>& truth,
                               const std::function<double(const Candidate&)>& model, const SearchOptions& o = {}) {
  ScriptedRunner runner(truth);
  ScriptedSearch s{model_search(predict(space, model), space, runner, o), {}};
  s.calls = std::move(runner.calls);
  return s;
}

// The same with a model that is right: the trials read what it predicts.
ScriptedSearch scripted_search(const SearchSpace& space, const std::function<double(const Candidate&)>& rate,
                               const SearchOptions& o = {}) {
  return scripted_search(space, rate, rate, o);
}

TEST(Search, DefaultSpaceStopsAtTheWorkerLimit) {
  const auto s = default_space(10);
  EXPECT_EQ(s.workers, (std::vector<int>{1, 2, 3, 4, 6, 8}));
  EXPECT_EQ(s.prefetch, (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(s.candidates().size(), 24u);
  EXPECT_EQ(default_space(4, true).candidates().size(), 32u);
}

TEST(Search, CheaperMeansFewerWorkersThenLessPrefetch) {
  EXPECT_TRUE(cheaper({4, 8, true}, {6, 1, true}));
  EXPECT_TRUE(cheaper({4, 1, true}, {4, 2, true}));
  EXPECT_TRUE(cheaper({4, 2, false}, {4, 2, true}));
  EXPECT_FALSE(cheaper({4, 2, true}, {4, 2, true}));
}

TEST(Search, ChooseTakesTheCheapestWithinTheTolerance) {
  std::vector<Trial> trials = {
      {{12, 4, true}, 1000, 0, 10, 2, "", true},
      {{8, 2, true}, 985, 0, 10, 2, "", true},  // within 2%
      {{6, 2, true}, 900, 0, 10, 2, "", true},
      {{4, 1, true}, 2000, 0, 3, 1, "", true},  // a short round does not compete with full ones
  };
  const auto c = choose(trials, 0.02);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->best.candidate, (Candidate{12, 4, true}));
  EXPECT_EQ(c->chosen.candidate, (Candidate{8, 2, true}));
  EXPECT_NE(c->reason.find("within 2%"), std::string::npos) << c->reason;
  EXPECT_NE(c->reason.find("8 workers instead of 12"), std::string::npos) << c->reason;
  EXPECT_FALSE(choose({}, 0.02));
  Trial failed{{2, 2, true}, 0, 0, 1, 2, "crashed", false};
  EXPECT_FALSE(choose({failed}, 0.02));
}

TEST(Search, ShortlistHasTheTopPredictionsAndTheirWorkerNeighbours) {
  const auto space = default_space(16);
  const auto list = shortlist(predict(space, plateau), space, 1);
  // Best predicted (ties to cheaper): 8 workers, prefetch 4; its neighbours
  // 6 and 12 workers, each with the prefetch the model prefers (4).
  EXPECT_EQ(list, (std::vector<Candidate>{{8, 4, true}, {6, 4, true}, {12, 4, true}}));
  const auto three = shortlist(predict(space, plateau), space, 3);
  // Picks 8, 12 and 16 workers (all at the plateau), then 6 as a neighbour.
  EXPECT_EQ(three.size(), 4u);
  EXPECT_EQ(three.back(), (Candidate{6, 4, true}));
}

TEST(Search, FreePrefetchMemoryPrefersTheDeeperQueue) {
  // 1 MiB batches; 64 MiB per rank count as free.
  const PrefetchCost cost{1024.0 * 1024, 64.0 * 1024 * 1024};
  EXPECT_TRUE(cost.is_free({8, 8, true}));      // 64 MiB
  EXPECT_FALSE(cost.is_free({12, 8, true}));    // 96 MiB
  EXPECT_TRUE(preferred({8, 8, true}, {8, 2, true}, cost));
  EXPECT_FALSE(preferred({8, 2, true}, {8, 8, true}, cost));
  EXPECT_TRUE(preferred({12, 4, true}, {12, 8, true}, cost)) << "over the free memory, less prefetch is cheaper";
  EXPECT_TRUE(preferred({4, 1, true}, {8, 8, true}, cost)) << "workers still come first";
  EXPECT_TRUE(preferred({8, 2, true}, {8, 8, true}, {})) << "without a cost, as cheaper()";
  EXPECT_DOUBLE_EQ(free_prefetch_bytes(3.2e9), 1e8);
  EXPECT_DOUBLE_EQ(free_prefetch_bytes(64e9), 256.0 * 1024 * 1024);
}

TEST(Search, ChooseKeepsAFreeDeeperPrefetchAndSaysWhy) {
  std::vector<Trial> trials = {
      {{2, 1, true}, 600, 0, 10, 2, "", true},
      {{2, 8, true}, 599, 0, 10, 2, "", true},  // within 2%, and its 16 MiB are free
      {{3, 8, true}, 610, 0, 10, 2, "", true},
  };
  const PrefetchCost cost{1024.0 * 1024, 64.0 * 1024 * 1024};
  const auto c = choose(trials, 0.02, cost);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->chosen.candidate, (Candidate{2, 8, true}));
  EXPECT_NE(c->reason.find("prefetch 8 rather than 1"), std::string::npos) << c->reason;
  EXPECT_NE(c->reason.find("16.0 MiB"), std::string::npos) << c->reason;
  EXPECT_EQ(choose(trials, 0.02)->chosen.candidate, (Candidate{2, 1, true})) << "no cost: the least prefetch";
}

TEST(Search, ShortlistTakesTheDeepestFreePrefetchTheModelCannotTellApart) {
  // The model sees prefetch 1-8 within 1% of each other at every worker count.
  const auto space = default_space(8);
  auto flat = [](const Candidate& c) { return std::min(c.workers, 2) * 300.0 * (c.prefetch_factor == 1 ? 1.0 : 0.995); };
  const PrefetchCost cost{1024.0 * 1024, 64.0 * 1024 * 1024};
  const auto list = shortlist(predict(space, flat), space, 1, cost);
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(list.front(), (Candidate{2, 8, true}));
  EXPECT_EQ(shortlist(predict(space, flat), space, 1).front(), (Candidate{2, 1, true}));
}

TEST(Search, ModelSearchFindsTheGridsAnswerWithFewerTrials) {
  const auto space = default_space(16);
  ScriptedRunner grid_runner(plateau), model_runner(plateau);
  SearchOptions o;
  const auto grid = grid_search(space, grid_runner, o);
  const auto model = model_search(predict(space, plateau), space, model_runner, o);
  ASSERT_TRUE(grid.choice && model.choice);
  EXPECT_EQ(grid.choice->chosen.candidate, (Candidate{8, 1, true}));
  EXPECT_GE(model.choice->chosen.samples_per_s, 0.98 * grid.choice->best.samples_per_s);
  EXPECT_EQ(grid_runner.calls.size(), space.candidates().size());
  EXPECT_LT(model.trial_seconds, 0.5 * grid.trial_seconds);
}

TEST(Search, TheCheapestConfigNearTheFirstRoundsBestGetsAFullTrial) {
  // 3, 6 and 8 workers within 2% of each other: the runner-up by throughput
  // (6) is no cheaper than the best (8); the full trial goes to 3 workers.
  const auto space = default_space(8);
  auto rate = [](const Candidate& c) { return c.workers >= 8 ? 505.0 : c.workers >= 6 ? 500.0 : c.workers >= 3 ? 496.0 : 300.0; };
  SearchOptions o;
  const auto r = scripted_search(space, rate, o);
  ASSERT_TRUE(r.choice);
  EXPECT_EQ(full_trial_workers(r.calls, o), (std::vector<int>{8, 3}));
  EXPECT_EQ(r.choice->chosen.candidate.workers, 3);
}

TEST(Search, AWrongModelIsCorrectedByTrials) {
  // The model believes more workers always help; trials show 4 is the knee.
  const auto space = default_space(16);
  auto truth = [](const Candidate& c) { return std::min(c.workers, 4) * 100.0 - c.workers; };
  SearchOptions o;
  o.shortlist = 4;
  const auto r = scripted_search(space, truth, per_worker(100.0), o);
  ASSERT_TRUE(r.choice);
  // The shortlist spans 16, 12, 8 and 6 workers (one pick per count) and
  // their neighbours, 4 among them: trials find the knee.
  EXPECT_EQ(r.choice->chosen.candidate.workers, 4);
}

// The incident's FUSE job: 8 workers run at 106/s, 6 at 86/s, and the
// model sees that gap. `short_eight` is what 8 workers' short trial reads
// (0: failed, -1: ran out of time); the other trials read the truth.
struct IncidentSearch {
  SearchOptions o;
  ScriptedRunner runner;
  SearchResult r;
  explicit IncidentSearch(std::function<double(const Candidate&, double)> trial) : runner(std::move(trial)) {
    const auto space = default_space(8);
    r = model_search(predict(space, per_worker(13.0)), space, runner, o);
  }
};
double incident_job(const Candidate& c) { return std::min(c.workers * 13.5, 106.0); }
IncidentSearch with_short_eight(double short_eight) {
  const double first_round = SearchOptions{}.short_round.max_seconds;
  return IncidentSearch([=](const Candidate& c, double seconds) {
    return c.workers == 8 && seconds == first_round ? short_eight : incident_job(c);
  });
}

// One short trial of 8 workers read 70 (a slow start), which put 6 workers
// first in the short round.
TEST(Search, TheModelsClearFavouriteGetsAFullTrialWhenOneShortTrialSaysOtherwise) {
  const auto s = with_short_eight(70.0);
  ASSERT_TRUE(s.r.choice);
  EXPECT_EQ(full_trial_workers(s.runner.calls, s.o), (std::vector<int>{6, 8}));
  EXPECT_EQ(s.r.choice->chosen.candidate.workers, 8);
}

// The same job, where 8 workers' short trial printed no figure at all in
// its 6 s: a longer trial can still measure it. A job that failed at 8
// workers (an error, not the clock) gets no second try.
TEST(Search, AShortTrialThatRanOutOfTimeDoesNotRuleOutTheModelsFavourite) {
  const auto out_of_time = with_short_eight(-1.0);
  ASSERT_TRUE(out_of_time.r.choice);
  EXPECT_EQ(full_trial_workers(out_of_time.runner.calls, out_of_time.o), (std::vector<int>{6, 8}));
  EXPECT_EQ(out_of_time.r.choice->chosen.candidate.workers, 8);
  const auto failed = with_short_eight(0.0);
  ASSERT_TRUE(failed.r.choice);
  EXPECT_EQ(full_trial_workers(failed.runner.calls, failed.o), (std::vector<int>{6}));
  EXPECT_EQ(failed.r.choice->chosen.candidate.workers, 6);
}

// A job whose start-up outlasts the short round prints nothing in any short
// trial: the model's favourite still gets a full one, and is chosen.
TEST(Search, WhenEveryShortTrialRanOutOfTimeTheFavouriteGetsAFullOne) {
  const double first_round = SearchOptions{}.short_round.max_seconds;
  const IncidentSearch s([=](const Candidate& c, double seconds) { return seconds == first_round ? -1.0 : incident_job(c); });
  ASSERT_TRUE(s.r.choice);
  EXPECT_EQ(full_trial_workers(s.runner.calls, s.o), (std::vector<int>{8}));
  EXPECT_EQ(s.r.choice->chosen.candidate.workers, 8);
  const IncidentSearch failing([](const Candidate&, double) { return 0.0; });  // real failures: nothing more is tried
  EXPECT_FALSE(failing.r.choice);
  EXPECT_TRUE(full_trial_workers(failing.runner.calls, failing.o).empty());
}

// The incident's FUSE job cold from the page cache: 8, 6 and 4 workers
// printed nothing in their short trials, 3
// did, and the model refitted to that one trial no longer put 8 ahead. The
// model before the refit still sends its favourite, which no trial
// measured, to a full trial.
TEST(Search, ARefitToOneShortTrialDoesNotRuleOutTheUnmeasuredFavourite) {
  const auto space = default_space(8);
  SearchOptions o;
  ScriptedRunner runner([&](const Candidate& c, double seconds) {
    if (seconds == o.short_round.max_seconds && c.workers >= 4) return -1.0;
    return std::min(c.workers, 8) * 13.5;
  });
  o.refit = [&](const std::vector<Trial>&) { return predict(space, [](const Candidate&) { return 45.0; }); };
  const auto r = model_search(predict(space, per_worker(13.0)), space, runner, o);
  ASSERT_TRUE(r.choice);
  const auto full = full_trial_workers(runner.calls, o);
  EXPECT_NE(std::find(full.begin(), full.end(), 8), full.end()) << "8 workers got no full trial";
  EXPECT_EQ(r.choice->chosen.candidate.workers, 8);
}

// One step down the knee counts a timed-out short trial as untried: on 3
// workers at most, 2 do as well as 3, but 2's short trial printed nothing.
TEST(Search, TheKneeStepTriesACheaperConfigWhoseShortTrialRanOutOfTime) {
  const auto space = default_space(3);
  auto model = per_worker(100.0);
  SearchOptions o;
  for (const double short_two : {-1.0, 0.0}) {
    ScriptedRunner runner([&](const Candidate& c, double seconds) {
      if (c.workers == 2 && seconds == o.short_round.max_seconds) return short_two;
      return c.workers >= 2 ? 700.0 - c.workers : 430.0;
    });
    const auto r = model_search(predict(space, model), space, runner, o);
    ASSERT_TRUE(r.choice);
    EXPECT_EQ(r.choice->chosen.candidate.workers, short_two < 0 ? 2 : 3) << short_two;
  }
}

// --exec on the incident's FUSE job: the short round tried
// every worker count at prefetch 8, the model refitted to it prefers
// prefetch 2, and the knee step then sent 6 workers, prefetch 2, to a full
// trial although 6 workers' short trial had read 25% below 8's. One worker
// count's short trial rules out its other prefetch depths; one that ran out
// of time rules out nothing, and the step still tries the refit's pick.
TEST(Search, TheKneeStepSkipsAWorkerCountItsShortTrialRuledOutAtAnotherPrefetch) {
  const auto space = default_space(8);
  auto deep = [](const Candidate& c) { return c.workers * 13.0 * (c.prefetch_factor == 8 ? 1.0 : 0.99); };
  auto shallow = [](const Candidate& c) { return c.workers * 13.0 * (c.prefetch_factor == 2 ? 1.0 : 0.99); };
  for (const double six_short : {78.0, -1.0}) {
    SearchOptions o;
    o.refit = [&](const std::vector<Trial>&) { return predict(space, shallow); };
    ScriptedRunner runner([&](const Candidate& c, double seconds) {
      return c.workers == 6 && seconds == o.short_round.max_seconds ? six_short : c.workers * 13.0;
    });
    const auto r = model_search(predict(space, deep), space, runner, o);
    ASSERT_TRUE(r.choice);
    EXPECT_EQ(r.choice->chosen.candidate.workers, 8);
    std::vector<Candidate> full;
    for (const auto& [c, seconds] : runner.calls) {
      if (seconds == o.full.max_seconds) full.push_back(c);
    }
    if (six_short > 0) {
      EXPECT_EQ(full, (std::vector<Candidate>{{8, 8, true}})) << "6 workers' short trial ruled the count out";
    } else {
      EXPECT_EQ(full, (std::vector<Candidate>{{8, 8, true}, {6, 2, true}})) << "nothing measured 6 workers";
    }
  }
}

TEST(Search, AModelThatAgreesWithTheShortRoundAddsNoFullTrial) {
  const auto space = default_space(8);
  auto rate = per_worker(13.0);
  SearchOptions o;
  const auto r = scripted_search(space, rate, o);
  ASSERT_TRUE(r.choice);
  // 8 workers' full trial; 6 (the next fewer) was short-tried and ruled out.
  EXPECT_EQ(full_trial_workers(r.calls, o), (std::vector<int>{8}));
}

TEST(Search, TheNextCheaperConfigTheShortlistLeftOutIsTried) {
  // Two cores and CPU-bound workers: 2 workers do as well as 3 to 8, but a
  // model misled by a noisy storage measurement ranks more workers higher,
  // and its shortlist (8, 6, 4 and 3 workers) leaves 2 out.
  const auto space = default_space(8);
  auto truth = [](const Candidate& c) { return c.workers >= 2 ? 700.0 - c.workers : 430.0; };
  auto wrong = per_worker(100.0);
  SearchOptions o;
  const auto r = scripted_search(space, truth, wrong, o);
  ASSERT_TRUE(r.choice);
  const auto full = full_trial_workers(r.calls, o);
  ASSERT_FALSE(full.empty());
  EXPECT_EQ(full.back(), 2) << "the step down the knee is the last trial";
  EXPECT_EQ(r.choice->chosen.candidate.workers, 2);
  for (const auto& [c, seconds] : r.calls) EXPECT_NE(c.workers, 1) << "one step down, not two";
}

Trial trial_at(int workers, int round, double samples_per_s) {
  Trial t;
  t.candidate = {workers, 8, true};
  t.round = round;
  t.samples_per_s = samples_per_s;
  return t;
}

TEST(Search, TheIntervalIsItsWidestTermAndNamesIt) {
  EXPECT_DOUBLE_EQ(interval_width(0.01, 0.005, 0).half, 0.02);
  EXPECT_EQ(interval_width(0.01, 0.005, 0).because, "the floor of 2%");
  const auto model = interval_width(0.06, 0.03, 0.04);
  EXPECT_DOUBLE_EQ(model.half, 0.06);
  EXPECT_EQ(model.because, "the model's median error on the trials, 6.0%");
  EXPECT_EQ(interval_width(0.06, 0.08, 0.04).because, "the model's spread over seeds, 8.0%");
  // On a noisy machine one config's two trials can differ by more than the model errs.
  const auto noisy = interval_width(0.06, 0.03, 0.186);
  EXPECT_DOUBLE_EQ(noisy.half, 0.186);
  EXPECT_EQ(noisy.because, "one config's two trials here differed by 18.6%");
}

TEST(Search, RepeatSpreadIsTheWidestGapBetweenAConfigsShortAndFullTrials) {
  EXPECT_EQ(repeat_spread({trial_at(2, 2, 460), trial_at(3, 1, 480)}), 0.0) << "no config ran twice";
  EXPECT_NEAR(repeat_spread({trial_at(2, 1, 500), trial_at(2, 2, 460), trial_at(3, 1, 480), trial_at(3, 2, 490)}),
              0.08, 1e-9);
}

// The local incident's job on 2 cores: 3
// workers' full trial read 3.4% above 2 workers', within the 3.1% by which
// 3 workers' own two trials differed plus the tolerance; paired runs give 2
// workers 592/s and 3 workers 515/s.
TEST(Search, WithinTheTrialsNoiseTheRefittedModelPicksTheCheaperConfig) {
  const std::vector<Trial> trials = {trial_at(3, 1, 497.6), trial_at(2, 1, 491.7), trial_at(3, 2, 513.3),
                                     trial_at(2, 2, 496.1)};
  const auto alike = predict(default_space(8), [](const Candidate& c) { return c.workers == 2 ? 542.0 : 540.0; });
  const auto choice = choose(trials, 0.02, {}, &alike);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->chosen.candidate.workers, 2);
  EXPECT_EQ(choice->best.candidate.workers, 3);
  EXPECT_NE(choice->reason.find("refitted"), std::string::npos) << choice->reason;
  EXPECT_EQ(choose(trials, 0.02)->chosen.candidate.workers, 3) << "without a model, the tolerance alone";
  // A model that sees 2 workers clearly slower leaves the measurement's pick.
  const auto slower = predict(default_space(8), [](const Candidate& c) { return c.workers == 2 ? 480.0 : 540.0; });
  EXPECT_EQ(choose(trials, 0.02, {}, &slower)->chosen.candidate.workers, 3);
  // Beyond the tolerance plus the spread, the trials decide.
  const std::vector<Trial> apart = {trial_at(3, 1, 497.6), trial_at(3, 2, 513.3), trial_at(2, 2, 470)};
  EXPECT_EQ(choose(apart, 0.02, {}, &alike)->chosen.candidate.workers, 3);
  // A wide short-to-full gap (a short window's start-up) counts for twice
  // the tolerance at most: 2 workers 5.5% below is within 2% + 4%, 7% is not.
  const std::vector<Trial> wide = {trial_at(3, 1, 450), trial_at(3, 2, 500), trial_at(2, 2, 472.5)};
  EXPECT_EQ(choose(wide, 0.02, {}, &alike)->chosen.candidate.workers, 2);
  const std::vector<Trial> wider = {trial_at(3, 1, 450), trial_at(3, 2, 500), trial_at(2, 2, 465)};
  EXPECT_EQ(choose(wider, 0.02, {}, &alike)->chosen.candidate.workers, 3);
  // The built-in loader's gap is noise alone (no start-up): a cap of 10%
  // lets its 11% count, and 7% below is within 2% + 10%.
  const auto builtin = choose(wider, 0.02, {}, &alike, 0.10);
  EXPECT_EQ(builtin->chosen.candidate.workers, 2);
  EXPECT_NE(builtin->reason.find("counted up to 10%"), std::string::npos) << builtin->reason;
  EXPECT_EQ(choose(wider, 0.02, {}, &slower, 0.10)->chosen.candidate.workers, 3) << "the model still has to agree";
}

// A refit that has nothing to go on (no trial read the job's CPU) leaves
// the predictions as given, and they rule no runner-up out.
TEST(Search, ARefitWithNothingMeasuredRulesNothingOut) {
  const auto space = default_space(8);
  const std::map<int, double> short_round = {{1, 275}, {2, 497}, {3, 472}, {4, 452}, {6, 485}, {8, 430}};
  const std::map<int, double> full_round = {{1, 290}, {2, 460}, {3, 500}, {4, 470}, {6, 508}, {8, 450}};
  SearchOptions o;
  o.refit = [](const std::vector<Trial>&) { return std::vector<Prediction>{}; };
  auto job = [&](const Candidate& c, double seconds) {
    return (seconds == o.short_round.max_seconds ? short_round : full_round).at(c.workers);
  };
  // Phase 2's model puts 6 workers 10% below 2: were it used, it would rule 6 out.
  const std::map<int, double> phase_two = {{1, 290}, {2, 569}, {3, 574}, {4, 566}, {6, 512}, {8, 550}};
  ScriptedRunner runner(job);
  const auto r = model_search(predict(space, [&](const Candidate& c) { return phase_two.at(c.workers); }), space, runner, o);
  EXPECT_EQ(full_trial_workers(runner.calls, o), (std::vector<int>{2, 6}));
}

// The local incident's job: the short round put 2 workers first and
// 6 workers second; 6's full trial then read 508 against 2's 460 (paired
// runs: 603 and 531). Refitted to the job's own CPU, the model puts 6
// workers 10% below 2: no full trial for it, and the next runner-up (3)
// gets the check. Its 485 is within 2% + 4% of 2's 460, and the model
// sees them alike: 2 workers.
TEST(Search, ACostlierRunnerUpTheRefittedModelRulesOutGetsNoFullTrial) {
  const auto space = default_space(8);
  const std::map<int, double> short_round = {{1, 275}, {2, 497}, {3, 472}, {4, 452}, {6, 485}, {8, 430}};
  const std::map<int, double> full_round = {{1, 290}, {2, 460}, {3, 485}, {4, 470}, {6, 508}, {8, 450}};
  const SearchOptions defaults;
  auto job = [&](const Candidate& c, double seconds) {
    return (seconds == defaults.short_round.max_seconds ? short_round : full_round).at(c.workers);
  };
  const std::map<int, double> phase_two = {{1, 290}, {2, 569}, {3, 574}, {4, 566}, {6, 560}, {8, 550}};
  const auto predictions = predict(space, [&](const Candidate& c) { return phase_two.at(c.workers); });
  {
    ScriptedRunner runner(job);
    const auto r = model_search(predictions, space, runner, defaults);
    EXPECT_EQ(full_trial_workers(runner.calls, defaults), (std::vector<int>{2, 6})) << "without a refit, 6 gets the full trial";
    EXPECT_EQ(r.choice->chosen.candidate.workers, 6);
  }
  const std::map<int, double> refitted = {{1, 303}, {2, 542}, {3, 540}, {4, 536}, {6, 486}, {8, 489}};
  int refits = 0;
  SearchOptions o;
  o.refit = [&](const std::vector<Trial>&) {
    ++refits;
    return predict(space, [&](const Candidate& c) { return refitted.at(c.workers); });
  };
  ScriptedRunner runner(job);
  const auto r = model_search(predictions, space, runner, o);
  EXPECT_EQ(full_trial_workers(runner.calls, o), (std::vector<int>{2, 3}));
  ASSERT_TRUE(r.choice);
  EXPECT_EQ(r.choice->chosen.candidate.workers, 2) << r.choice->reason;
  EXPECT_EQ(refits, 2) << "after the short round and before the choice";
}

// The incident's FUSE job under --exec: 6 workers' short trial read 94 against 8's 104, inside the 10% that
// makes it the runner-up, while the model refitted to the short round puts
// it 20% below. Its full trial (88) could not change the choice. A model
// that sees the two alike still sends the cheaper runner-up to its check.
TEST(Search, ACheaperRunnerUpTheRefittedModelPutsFarBelowGetsNoFullTrial) {
  const auto space = default_space(8);
  const std::map<int, double> short_round = {{1, 16}, {2, 32}, {3, 48}, {4, 62}, {6, 94}, {8, 104}};
  const std::map<int, double> full_round = {{1, 15}, {2, 31}, {3, 46}, {4, 60}, {6, 88}, {8, 107}};
  for (const double six_in_model : {86.0, 100.0}) {
    SearchOptions o;
    o.refit = [&](const std::vector<Trial>&) {
      return predict(space, [&](const Candidate& c) { return c.workers == 6 ? six_in_model : c.workers * 13.5; });
    };
    ScriptedRunner runner([&](const Candidate& c, double seconds) {
      return (seconds == o.short_round.max_seconds ? short_round : full_round).at(c.workers);
    });
    const auto r = model_search(predict(space, per_worker(13.5)), space, runner, o);
    ASSERT_TRUE(r.choice);
    EXPECT_EQ(r.choice->chosen.candidate.workers, 8);
    const std::vector<int> expected = six_in_model < 97 ? std::vector<int>{8} : std::vector<int>{8, 6};
    EXPECT_EQ(full_trial_workers(runner.calls, o), expected)
        << "6 workers at " << six_in_model << " in the refitted model against 8's 108";
  }
}

TEST(Search, TheBudgetStopsTrialsAndKeepsTheBestSoFar) {
  const auto space = default_space(16);
  ScriptedRunner runner(plateau);
  SearchOptions o;
  double now = 0;
  o.clock = [&] { return now += 1.0; };  // each look at the clock: a second later
  o.budget_seconds = 0.5;                // spent before the first trial
  const auto r = grid_search(space, runner, o);
  EXPECT_TRUE(r.stopped_early);
  EXPECT_TRUE(runner.calls.empty());
  EXPECT_FALSE(r.choice);
}

TEST(Search, TheStopFlagEndsTheSearch) {
  const auto space = default_space(16);
  std::atomic<bool> stop{false};
  int seen = 0;
  ScriptedRunner runner(plateau);
  SearchOptions o;
  o.stop = &stop;
  o.on_trial = [&](const Trial&, const std::optional<Trial>& best) {
    EXPECT_TRUE(best.has_value());
    if (++seen == 3) stop = true;
  };
  const auto r = grid_search(space, runner, o);
  EXPECT_EQ(runner.calls.size(), 3u);
  EXPECT_TRUE(r.stopped_early);
  ASSERT_TRUE(r.choice) << "the best so far is still chosen";
}

// I/O-bound: each worker adds 10 samples/s up to 40 workers, past the
// space's edge of 8; the search grows it one ladder step at a time while
// the best full trial sits at the edge, and stops when a step gains nothing.
TEST(Search, TheSpaceGrowsWhileTheBestSitsAtItsEdge) {
  const auto space = default_space(8);
  auto rate = [](const Candidate& c) { return std::min(c.workers, 40) * 10.0; };
  SearchOptions o;
  o.worker_cap = 256;
  const auto r = scripted_search(space, rate, o);
  ASSERT_TRUE(r.choice);
  EXPECT_EQ(r.grew_to, (std::vector<int>{12, 16, 24, 32, 48, 64}));
  EXPECT_EQ(r.choice->chosen.candidate.workers, 48) << "40 would do, but it is not on the ladder";
  EXPECT_FALSE(r.limited_by_cap);
  EXPECT_NE(r.edge.find("stopped growing at 48"), std::string::npos) << r.edge;
}

TEST(Search, TheCapStopsTheGrowthAndSaysItLimited) {
  const auto space = default_space(8);
  auto rate = per_worker(10.0);
  SearchOptions o;
  o.worker_cap = 16;
  const auto r = scripted_search(space, rate, o);
  ASSERT_TRUE(r.choice);
  EXPECT_EQ(r.choice->chosen.candidate.workers, 16);
  EXPECT_TRUE(r.limited_by_cap);
  for (const auto& [c, seconds] : r.calls) EXPECT_LE(c.workers, 16);
}

TEST(Search, ACpuBoundSearchDoesNotGrow) {
  const auto space = default_space(8);
  auto rate = per_worker(10.0);  // at the edge, but...
  SearchOptions o;
  o.worker_cap = 256;
  o.cpu_bound = [](const std::vector<Trial>&) { return true; };  // ...the cores are used up
  const auto r = scripted_search(space, rate, o);
  ASSERT_TRUE(r.choice);
  EXPECT_TRUE(r.grew_to.empty());
  EXPECT_NE(r.edge.find("CPU-bound"), std::string::npos) << r.edge;
  for (const auto& [c, seconds] : r.calls) EXPECT_LE(c.workers, 8);
}

TEST(Search, WithoutACapTheSearchKeepsToItsSpace) {
  const auto space = default_space(8);
  auto rate = per_worker(10.0);
  const auto r = scripted_search(space, rate);
  EXPECT_TRUE(r.grew_to.empty());
  for (const auto& [c, seconds] : r.calls) EXPECT_LE(c.workers, 8);
}

TEST(Search, TheModelsSpaceWidensToTheBottleneckAndNotPastIt) {
  auto io_bound = [](const SearchSpace& s) {  // 5 samples/s a worker, fed at 300
    return predict(s, [](const Candidate& c) { return std::min(c.workers * 5.0, 300.0); });
  };
  std::vector<Prediction> out;
  const auto wide = widen_to_the_bottleneck(default_space(8), 256, 0.02, io_bound, out);
  EXPECT_EQ(wide.workers.back(), 64) << "60 workers feed it; 64 is the ladder's next, 96 gains nothing";
  EXPECT_EQ(out.size(), wide.candidates().size());
  auto cpu_bound = [](const SearchSpace& s) {  // 2 cores' worth, whatever the workers
    return predict(s, [](const Candidate& c) { return std::min(c.workers, 2) * 100.0; });
  };
  EXPECT_EQ(widen_to_the_bottleneck(default_space(8), 256, 0.02, cpu_bound, out).workers.back(), 8);
  EXPECT_EQ(widen_to_the_bottleneck(default_space(8), 16, 0.02, io_bound, out).workers.back(), 16) << "the cap";
}

TEST(Search, TheWorkerCapIsItsTightestLimitAndNamesIt) {
  WorkerCapInputs in;
  EXPECT_EQ(worker_cap(in).workers, 256);
  in.open_files = 1024;  // 4 files a worker: 256
  in.mem_available = 8ULL << 30;
  in.bytes_per_worker = 64ULL << 20;  // 128 workers
  EXPECT_EQ(worker_cap(in).workers, 128);
  EXPECT_NE(worker_cap(in).because.find("memory"), std::string::npos);
  in.batch_bytes = 1 << 20;
  in.pinned_per_rank = 48ULL << 20;  // 48 one-batch workers
  EXPECT_EQ(worker_cap(in).workers, 48);
  EXPECT_NE(worker_cap(in).because.find("page-locked"), std::string::npos);
  in.user_max = 20;
  EXPECT_EQ(worker_cap(in).workers, 20);
  EXPECT_EQ(worker_cap(in).because, "max_workers") << "the setting, as the front end spells it";
  in.user_max = 1000;  // the user's cap does not lift the machine's
  EXPECT_EQ(worker_cap(in).workers, 48);
}

TEST(Search, CpuShareIsTheCoresTheSamplesUsed) {
  Trial t;
  t.samples_per_s = 150;
  t.transform_cpu_ms = 10;  // 1.5 cores
  EXPECT_DOUBLE_EQ(cpu_share(t, 2, 1), 0.75);
  EXPECT_DOUBLE_EQ(cpu_share(t, 2, 2), 1.5) << "per rank, all ranks on the cores";
  t.transform_cpu_ms = 0;
  EXPECT_DOUBLE_EQ(cpu_share(t, 2, 1), 0) << "not measured";
}

TEST(Search, TheIntervalComesFromRepeatsAndIsClippedToTheStep) {
  const auto one = repeat_interval({100}, 0.05, 0);
  EXPECT_FALSE(one.given);
  EXPECT_NE(one.because.find("one trial"), std::string::npos) << one.because;
  EXPECT_DOUBLE_EQ(one.samples_per_s, 100);
  const auto two = repeat_interval({96, 104}, 0, 0);
  ASSERT_TRUE(two.given);
  EXPECT_DOUBLE_EQ(two.samples_per_s, 100);
  EXPECT_NEAR(two.low, 92, 1e-9);
  EXPECT_NEAR(two.high, 108, 1e-9);
  const auto model = repeat_interval({99, 101}, 0.10, 0);
  EXPECT_NEAR(model.high, 110, 1e-9) << "the model's known error widens it";
  EXPECT_NE(model.because.find("model"), std::string::npos);
  const auto wild = repeat_interval({99, 101}, 7.09, 0);
  EXPECT_NEAR(wild.high, 102.0, 1e-9) << "a model 709% off says nothing of this config's figure";
  const auto clipped = repeat_interval({98, 102}, 0, 101);
  EXPECT_DOUBLE_EQ(clipped.high, 101) << "no more than the step allows";
  EXPECT_NE(clipped.because.find("what the step allows"), std::string::npos);
  const auto noisy = repeat_interval({40, 100}, 0, 0);
  EXPECT_FALSE(noisy.given);
  EXPECT_NE(noisy.because.find("too noisy"), std::string::npos) << noisy.because;
}

TEST(Search, TrialsAreAskedForStepsWithTheRoundsCaps) {
  const auto space = default_space(8);
  std::vector<TrialLength> asked;
  class Recorder final : public TrialRunner {
   public:
    explicit Recorder(std::vector<TrialLength>& a) : asked_(a) {}
    Trial run(const Candidate& c, const TrialLength& length) override {
      asked_.push_back(length);
      Trial t;
      t.samples_per_s = plateau(c);
      t.steady_steps = length.steps;
      return t;
    }

   private:
    std::vector<TrialLength>& asked_;
  } runner(asked);
  SearchOptions o;
  o.short_round = {15, 20};
  o.full = {45, 90};
  model_search(predict(space, plateau), space, runner, o);
  ASSERT_FALSE(asked.empty());
  for (const auto& l : asked) EXPECT_TRUE(l == o.short_round || l == o.full) << l.steps;
}

}  // namespace
}  // namespace gpufeed::tune
