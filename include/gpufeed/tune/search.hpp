#pragma once
// The search over DataLoader configs (docs/tune.md): the model ranks every
// candidate, trials verify the most promising and their neighbours (losers
// are stopped after a short first round), and the cheapest config within a
// tolerance of the best measured throughput wins. `grid` runs a trial of
// every candidate instead: the exhaustive baseline.
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/tune/dataloader_model.hpp"

namespace gpufeed::tune {

struct SearchSpace {
  std::vector<int> workers;
  std::vector<int> prefetch;
  std::vector<bool> pin_memory;
  std::vector<Candidate> candidates() const;
};
// The worker counts tune considers, at most about 1.5x apart:
// 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256.
const std::vector<int>& worker_ladder();
// The ladder's next count above `workers` (0: none).
int next_worker_step(int workers);
// workers of the ladder up to max_workers; prefetch 1, 2, 4, 8; pin_memory
// on (and off when `both_pin`).
SearchSpace default_space(int max_workers, bool both_pin = false);

// The most workers per rank a search may grow to, and what set it: the
// user's --max-workers, the page-locked budget (one batch per worker at
// the least), the memory a worker needs, the open-file limit, or the
// ladder's top.
struct WorkerCap {
  int workers = 256;
  std::string because = "the top of the worker ladder";
};
struct WorkerCapInputs {
  int user_max = 0;                   // --max-workers (0: none)
  double batch_bytes = 0;             // one batch's page-locked bytes
  std::uint64_t pinned_per_rank = 0;  // page-locked budget per rank (0: unknown)
  std::uint64_t mem_available = 0;    // host memory a rank's workers may use (0: unknown)
  std::uint64_t bytes_per_worker = 0; // what one worker costs beyond its batches
  std::uint64_t open_files = 0;       // the open-file limit per rank (0: unknown)
  int files_per_worker = 4;           // a worker's pipes, its open sample, its queue
};
WorkerCap worker_cap(const WorkerCapInputs& in);

// The space the model searches first: the ladder up to 4 workers per core
// (workers that wait on storage sleep), then one step further at a time
// while the best prediction sits at the space's edge and the step gains at
// least `tolerance` (I/O-bound workers: more of them keep more fetches in
// flight), up to `cap`. A CPU-bound workload's best prediction stays inside
// the cores, so its space does not grow. `predict` simulates the candidates
// of a space; the predictions of the returned space come back in `out`.
SearchSpace widen_to_the_bottleneck(SearchSpace space, int cap, double tolerance,
                                    const std::function<std::vector<Prediction>(const SearchSpace&)>& predict,
                                    std::vector<Prediction>& out);

// How long a trial runs: `steps` steady-state steps after its warm-up (the
// first batch's arrival and prefetch x workers batches), with `max_seconds`
// as a cap that a trial reports (Trial::capped) when it cuts the trial short.
struct TrialLength {
  int steps = 60;
  double max_seconds = 120;
  bool operator==(const TrialLength&) const = default;
};

// A config is cheaper when it uses fewer workers (cores, processes), then
// less page-locked memory (prefetch), then no pinning.
bool cheaper(const Candidate& a, const Candidate& b);

// What prefetch costs: page-locked memory, workers x prefetch x batch bytes
// per rank. Under `free_bytes` that memory is no real cost, and the deeper
// prefetch is the better buy: it absorbs slow batches (a tail sample, a
// real job's batch hand-off) that trials of seconds seldom show.
struct PrefetchCost {
  double batch_bytes = 0;  // one batch's page-locked bytes (0: prefetch is never free)
  double free_bytes = 0;   // per rank
  double bytes(const Candidate& c) const { return c.workers * c.prefetch_factor * batch_bytes; }
  bool is_free(const Candidate& c) const { return batch_bytes > 0 && bytes(c) <= free_bytes; }
};
// `a` is preferred to `b`: fewer workers; with as many, the deeper prefetch
// when both are free, else the shallower; then no pinning.
bool preferred(const Candidate& a, const Candidate& b, const PrefetchCost& cost);
// Per-rank page-locked memory that counts as free under a per-rank budget:
// 1/32 of it, at most 256 MiB.
double free_prefetch_bytes(double mem_per_rank);

struct Trial {
  Candidate candidate;
  double samples_per_s = 0;  // per rank
  double starvation = 0;
  double seconds = 0;        // how long it ran
  int round = 1;             // 1: the short first round; 2: the full trial
  std::string note;          // why it failed or stopped, when it did
  bool ok = true;
  // Failed only for want of time: the job still ran but printed no figure
  // within the trial (a short round shorter than its start-up), which a
  // longer trial can still measure.
  bool too_short = false;
  double model_samples_per_s = 0;  // the raw model's figure for this config (0: none); set by tune for the record
  // The CPU per sample, and over how many samples: built-in trials time
  // each sample's transform (all ranks); a job's trials read its workers'
  // CPU from /proc (job_cpu.hpp). 0: not measured.
  double transform_ms = 0;
  std::uint64_t transform_samples = 0;
  // Built-in trials: the workers' CPU time per sample in the same samples
  // (transform_ms is wall time, which holds a worker's wait for a core). 0: not measured.
  double transform_cpu_ms = 0;
  double loop_cpu_ms = 0;  // a job's trials: its loop process's CPU per batch (0: not measured)
  int steady_steps = 0;    // steps measured after the warm-up (0: the target does not count them)
  bool capped = false;     // its TrialLength::max_seconds cut it short of its steps
};

class TrialRunner {
 public:
  virtual ~TrialRunner() = default;
  // Runs `c` for `length` and measures it. A failed run returns ok=false
  // with a note; an error that dooms every trial throws.
  virtual Trial run(const Candidate& c, const TrialLength& length) = 0;
};

struct SearchOptions {
  double tolerance = 0.02;         // "within 2% of the best"
  TrialLength full{60, 120};         // a full trial
  TrialLength short_round{20, 40};  // the short round that weeds out losers
  int shortlist = 3;               // top predictions verified (plus neighbours)
  PrefetchCost prefetch_cost;      // when a deeper prefetch is preferred
  double budget_seconds = 0;       // wall-time budget of all trials; 0: none
  // Seconds on the budget's clock (any origin); empty: the steady clock.
  // Tests drive the budget with a fake clock.
  std::function<double()> clock;
  std::function<void(const Trial&, const std::optional<Trial>& best)> on_trial;
  const std::atomic<bool>* stop = nullptr;
  // The model again, from what the trials so far measured (tune --exec: the
  // job's own CPU per sample and per batch, job_cpu.hpp); empty: keep the
  // predictions given. model_search asks after the short round, for the
  // full trials it picks, and after the last trial, for the choice; both
  // searches keep the last answer in SearchResult::refitted.
  std::function<std::vector<Prediction>(const std::vector<Trial>&)> refit;
  // The most the trials' own noise (repeat_spread) counts for in choose();
  // 0: twice the tolerance. A job's short trial holds its start-up, so its
  // short-to-full gap is more than noise; the built-in loader's is noise.
  double noise_cap = 0;
  // The most workers the search may grow to past the space's edge
  // (worker_cap()); 0: the space's edge.
  int worker_cap = 0;
  // Whether the trials so far show the workers CPU-bound (cpu_bound()):
  // then more workers only contend for the cores, and the search does not
  // grow past the edge. Empty: never.
  std::function<bool(const std::vector<Trial>&)> cpu_bound;
};

// The share of the worker cores a trial's samples used: throughput x ranks
// x CPU per sample (the workers' and the loop's) over the cores; 0 when the
// trial measured no CPU.
double cpu_share(const Trial& t, double worker_cores, int ranks);
// A config is CPU-bound when its trial used at least 85% of the cores.
constexpr double kCpuBoundShare = 0.85;

struct Choice {
  Trial chosen;
  Trial best;                // highest measured throughput
  std::string reason;        // why `chosen` won, in one sentence
};

struct SearchResult {
  std::vector<Trial> trials;
  std::optional<Choice> choice;  // none when no trial succeeded
  bool stopped_early = false;    // budget or stop flag
  double trial_seconds = 0;      // sum of trial times
  std::vector<Prediction> refitted;  // SearchOptions::refit's model of every trial, the choice's (empty: none)
  // The search past the space's edge: the worker counts it added, and why
  // it stopped growing ("" when the best never sat at the edge).
  std::vector<int> grew_to;
  std::string edge;
  bool limited_by_cap = false;  // the best sat at the cap: more workers might have helped
};

// The best prediction for each of the top `k` worker counts (by predicted
// throughput; where prefetch memory is free, the deepest prefetch within 1%
// of that count's best), then their neighbours in the space (one step fewer and more workers,
// each with the prefetch picked the same way), without duplicates, best
// prediction first.
std::vector<Candidate> shortlist(const std::vector<Prediction>& predictions, const SearchSpace& space, int k,
                                 const PrefetchCost& cost = {});

// How far a config's full trial landed from its short one, the most over the
// configs that had both (0: none had): what one trial of this target on
// this machine can be off by.
double repeat_spread(const std::vector<Trial>& trials);

// The chosen config's interval, as a share either side of its full trial:
// the widest of the model's median error on the trials, the model's spread
// over seeds, and repeat_spread() (what one trial here can be off by: on a
// noisy machine the widest term), at least 2%. `because` names the term
// that set it, for the report and the config.
struct IntervalWidth {
  double half = 0.02;
  std::string because;
};
IntervalWidth interval_width(double model_error, double seed_spread, double trial_noise);

// Of the successful trials (full rounds preferred), the preferred one within
// `tolerance` of the best. Given a `model` refitted to these trials, a
// preferred config also wins when it came within the tolerance plus
// repeat_spread() (counted up to `noise_cap`, 0: twice the tolerance) of the
// best and the model predicts it within the tolerance of the best too: the
// trials cannot tell the two apart, and the model says the cheaper one
// gives up nothing.
std::optional<Choice> choose(const std::vector<Trial>& trials, double tolerance, const PrefetchCost& cost = {},
                             const std::vector<Prediction>* model = nullptr, double noise_cap = 0);

// The chosen config's interval from its repeated full trials: their
// spread (at least 2% either side), widened by the model's median error on
// the trials when that is known and under 25% (a model further off than
// that says nothing about this config's figure), and clipped to what the
// step allows (`ceiling`: batch / step per rank; 0: none). With one trial,
// or trials more than 50% apart, no interval is given and `because` says
// why in words.
struct Interval {
  bool given = false;
  double samples_per_s = 0;  // the trials' median
  double low = 0, high = 0;
  std::string because;
};
Interval repeat_interval(const std::vector<double>& runs, double model_error, double ceiling);

SearchResult model_search(const std::vector<Prediction>& predictions, const SearchSpace& space, TrialRunner& runner,
                          const SearchOptions& options);
SearchResult grid_search(const SearchSpace& space, TrialRunner& runner, const SearchOptions& options);

}  // namespace gpufeed::tune
