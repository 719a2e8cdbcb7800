// Model-guided and grid search over DataLoader configs (search.hpp).
#include "gpufeed/tune/search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <tuple>

#include "gpufeed/setting.hpp"

namespace gpufeed::tune {
namespace {

using Clock = std::chrono::steady_clock;

auto key(const Candidate& c) { return std::make_tuple(c.workers, c.prefetch_factor, c.pin_memory); }

// Index of `value` in `list`, or -1.
template <typename T>
int index_of(const std::vector<T>& list, const T& value) {
  const auto it = std::find(list.begin(), list.end(), value);
  return it == list.end() ? -1 : static_cast<int>(it - list.begin());
}

class TrialLog {
 public:
  TrialLog(TrialRunner& runner, const SearchOptions& options)
      : runner_(runner), options_(options), start_(Clock::now()), start_s_(now()) {}

  // False when the budget or the stop flag says no more trials. A trial's
  // length is estimated from the earlier trials of its round (none: it
  // runs while any budget is left).
  bool may_run(int round) const {
    if (options_.stop && options_.stop->load()) return false;
    if (options_.budget_seconds <= 0) return true;
    const double spent = now() - start_s_;
    double sum = 0;
    int n = 0;
    for (const auto& t : result.trials) {
      if (t.round == round) sum += t.seconds, ++n;
    }
    return spent + (n ? sum / n : 0.0) <= options_.budget_seconds && spent < options_.budget_seconds;
  }

  std::optional<Trial> run(const Candidate& c, const TrialLength& length, int round) {
    if (!may_run(round)) {
      result.stopped_early = true;
      return std::nullopt;
    }
    Trial t = runner_.run(c, length);
    t.candidate = c;
    t.round = round;
    result.trials.push_back(t);
    result.trial_seconds += t.seconds;
    if (options_.on_trial) {
      const auto best = choose(result.trials, options_.tolerance, options_.prefetch_cost);
      options_.on_trial(t, best ? std::optional<Trial>(best->best) : std::nullopt);
    }
    return t;
  }

  SearchResult result;

 private:
  TrialRunner& runner_;
  const SearchOptions& options_;
  double now() const {
    return options_.clock ? options_.clock() : std::chrono::duration<double>(Clock::now() - start_).count();
  }

  Clock::time_point start_;
  double start_s_ = 0;
};

}  // namespace

std::vector<Candidate> SearchSpace::candidates() const {
  std::vector<Candidate> out;
  for (int w : workers) {
    for (int p : prefetch) {
      for (bool pin : pin_memory) out.push_back({w, p, pin});
    }
  }
  return out;
}

const std::vector<int>& worker_ladder() {
  static const std::vector<int> ladder{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};
  return ladder;
}

int next_worker_step(int workers) {
  for (int w : worker_ladder()) {
    if (w > workers) return w;
  }
  return 0;
}

SearchSpace default_space(int max_workers, bool both_pin) {
  SearchSpace s;
  for (int w : worker_ladder()) {
    if (w <= std::max(1, max_workers)) s.workers.push_back(w);
  }
  s.prefetch = {1, 2, 4, 8};
  s.pin_memory = both_pin ? std::vector<bool>{true, false} : std::vector<bool>{true};
  return s;
}

bool cheaper(const Candidate& a, const Candidate& b) { return preferred(a, b, {}); }

bool preferred(const Candidate& a, const Candidate& b, const PrefetchCost& cost) {
  if (a.workers != b.workers) return a.workers < b.workers;
  if (a.prefetch_factor != b.prefetch_factor) {
    if (cost.is_free(a) && cost.is_free(b)) return a.prefetch_factor > b.prefetch_factor;
    return a.prefetch_factor < b.prefetch_factor;
  }
  return !a.pin_memory && b.pin_memory;
}

double free_prefetch_bytes(double mem_per_rank) { return std::min(mem_per_rank / 32, 256.0 * 1024 * 1024); }

WorkerCap worker_cap(const WorkerCapInputs& in) {
  WorkerCap cap;
  cap.workers = worker_ladder().back();
  auto lower = [&](double limit, std::string because) {
    const int w = static_cast<int>(std::max(1.0, std::floor(limit)));
    if (w < cap.workers) cap = {w, std::move(because)};
  };
  if (in.batch_bytes > 0 && in.pinned_per_rank > 0) {
    lower(static_cast<double>(in.pinned_per_rank) / in.batch_bytes,
          "the page-locked budget per rank (one batch per worker at the least)");
  }
  if (in.mem_available > 0 && in.bytes_per_worker > 0) {
    lower(static_cast<double>(in.mem_available) / static_cast<double>(in.bytes_per_worker),
          fmt::format("the memory free for workers ({:.0f} MiB each)", static_cast<double>(in.bytes_per_worker) / 1048576.0));
  }
  if (in.open_files > 0 && in.files_per_worker > 0) {
    lower(static_cast<double>(in.open_files) / in.files_per_worker,
          fmt::format("the open-file limit ({} per rank, {} per worker)", in.open_files, in.files_per_worker));
  }
  if (in.user_max > 0 && in.user_max <= cap.workers) cap = {in.user_max, spell(Setting::max_workers)};
  return cap;
}

namespace {

// The best prediction's worker count, and its throughput (ties: fewer workers).
std::pair<int, double> best_of(const std::vector<Prediction>& predictions) {
  std::pair<int, double> best{0, -1};
  for (const auto& p : predictions) {
    if (p.samples_per_s > best.second || (p.samples_per_s == best.second && p.candidate.workers < best.first)) {
      best = {p.candidate.workers, p.samples_per_s};
    }
  }
  return best;
}

}  // namespace

SearchSpace widen_to_the_bottleneck(SearchSpace space, int cap, double tolerance,
                                    const std::function<std::vector<Prediction>(const SearchSpace&)>& predict,
                                    std::vector<Prediction>& out) {
  out = predict(space);
  while (!space.workers.empty()) {
    const auto [best_w, best] = best_of(out);
    const int edge = space.workers.back();
    const int next = next_worker_step(edge);
    if (best_w != edge || next == 0 || next > cap) break;
    SearchSpace step = space;
    step.workers = {next};
    const auto more = predict(step);
    const auto [more_w, more_best] = best_of(more);
    if (more.empty() || more_best < (1 + tolerance) * best) break;
    space.workers.push_back(next);
    out.insert(out.end(), more.begin(), more.end());
  }
  return space;
}

double cpu_share(const Trial& t, double worker_cores, int ranks) {
  // The built-in loader's CPU time per sample, else a job's (read from
  // /proc, where transform_ms is CPU and not wall time). The loop's CPU
  // per batch is left out: it is the step's, whichever the workers do.
  const double per_sample = t.transform_cpu_ms > 0 ? t.transform_cpu_ms : t.transform_ms;
  if (!t.ok || per_sample <= 0 || worker_cores <= 0) return 0;
  return t.samples_per_s * per_sample * std::max(1, ranks) / 1000 / worker_cores;
}

Interval repeat_interval(const std::vector<double>& runs_in, double model_error, double ceiling) {
  Interval iv;
  std::vector<double> runs;
  for (double r : runs_in) {
    if (r > 0) runs.push_back(r);
  }
  if (runs.empty()) {
    iv.because = "no successful trial of this config";
    return iv;
  }
  std::sort(runs.begin(), runs.end());
  const std::size_t n = runs.size();
  iv.samples_per_s = n % 2 ? runs[n / 2] : (runs[n / 2 - 1] + runs[n / 2]) / 2;
  if (n < 2) {
    iv.because = "one trial of this config: too thin for an interval (gpufeed check measures it again)";
    return iv;
  }
  const double spread = (runs.back() - runs.front()) / iv.samples_per_s;
  if (spread > 0.5) {
    iv.because = fmt::format("its {} trials differ by {:.0f}%: too noisy for an interval", n, spread * 100);
    return iv;
  }
  double half = std::max(0.02, spread);
  iv.because = spread > 0.02 ? fmt::format("the spread of its {} trials, {:.1f}%", n, spread * 100)
                             : fmt::format("its {} trials agree within 2%: the floor of 2%", n);
  if (model_error > half && model_error < 0.25) {
    half = model_error;
    iv.because = fmt::format("the model's median error on the trials, {:.1f}% (its {} trials differ by {:.1f}%)",
                             model_error * 100, n, spread * 100);
  }
  iv.given = true;
  iv.low = iv.samples_per_s * (1 - half);
  iv.high = iv.samples_per_s * (1 + half);
  if (ceiling > 0 && iv.high > ceiling) {
    iv.high = std::max(ceiling, iv.samples_per_s);
    iv.because += fmt::format("; at most {:.0f}, what the step allows (batch / step)", ceiling);
  }
  return iv;
}

namespace {

// Best predicted first; ties to the preferred (cheaper) config.
std::vector<Prediction> ranked_by_model(const std::vector<Prediction>& predictions, const PrefetchCost& cost) {
  std::vector<Prediction> ranked = predictions;
  std::stable_sort(ranked.begin(), ranked.end(), [&](const Prediction& a, const Prediction& b) {
    if (a.samples_per_s != b.samples_per_s) return a.samples_per_s > b.samples_per_s;
    return preferred(a.candidate, b.candidate, cost);
  });
  return ranked;
}

// For one worker count, the prefetch (and pinning) the model likes best;
// where its memory is free, the deepest within 1% of that best (the
// simulation's noise cannot tell them apart).
std::optional<Candidate> model_pick(const std::vector<Prediction>& ranked, int workers, const PrefetchCost& cost) {
  std::optional<Prediction> top, pick;
  for (const auto& p : ranked) {
    if (p.candidate.workers != workers) continue;
    if (!top) top = pick = p;
    if (p.samples_per_s >= 0.99 * top->samples_per_s && cost.is_free(p.candidate) && cost.is_free(pick->candidate) &&
        preferred(p.candidate, pick->candidate, cost)) {
      pick = p;
    }
  }
  return pick ? std::optional<Candidate>(pick->candidate) : std::nullopt;
}

double predicted(const std::vector<Prediction>& predictions, const Candidate& c) {
  for (const auto& p : predictions) {
    if (p.candidate == c) return p.samples_per_s;
  }
  return 0;
}

// Whether any trial of `c` passes `test`.
template <typename Test>
bool any_trial_of(const std::vector<Trial>& trials, const Candidate& c, Test test) {
  return std::any_of(trials.begin(), trials.end(), [&](const Trial& t) { return t.candidate == c && test(t); });
}

const Trial* trial_of(const std::vector<Trial>& trials, const Candidate& c, int round) {
  for (const auto& t : trials) {
    if (t.ok && t.round == round && t.candidate == c) return &t;
  }
  return nullptr;
}

// The fastest successful short trial of any config with `workers` workers
// (0: none). Prefetch buffers against spikes and adds no concurrency, so
// one worker count's short trials speak for its other prefetch depths.
double best_short_at(const std::vector<Trial>& trials, int workers) {
  double best = 0;
  for (const auto& t : trials) {
    if (t.ok && t.round == 1 && t.candidate.workers == workers) best = std::max(best, t.samples_per_s);
  }
  return best;
}

}  // namespace

std::vector<Candidate> shortlist(const std::vector<Prediction>& predictions, const SearchSpace& space, int k,
                                 const PrefetchCost& cost) {
  const std::vector<Prediction> ranked = ranked_by_model(predictions, cost);
  auto best_for = [&](int workers) { return model_pick(ranked, workers, cost); };
  std::vector<Candidate> out;
  auto add = [&](const Candidate& c) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  std::vector<int> worker_counts;  // one pick per worker count keeps the shortlist diverse
  for (const auto& prediction : ranked) {
    if (static_cast<int>(worker_counts.size()) >= k) break;
    const int w = prediction.candidate.workers;
    if (std::find(worker_counts.begin(), worker_counts.end(), w) != worker_counts.end()) continue;
    worker_counts.push_back(w);
    add(*best_for(w));
  }
  // Neighbours: one step fewer and more workers than each pick, each with
  // the model's preferred prefetch. Trials then settle the knee.
  for (std::size_t i = 0, n = out.size(); i < n; ++i) {
    const int wi = index_of(space.workers, out[i].workers);
    for (int d : {-1, 1}) {
      const int w = wi + d;
      if (wi < 0 || w < 0 || w >= static_cast<int>(space.workers.size())) continue;
      if (auto c = best_for(space.workers[static_cast<std::size_t>(w)])) add(*c);
    }
  }
  return out;
}

double repeat_spread(const std::vector<Trial>& trials) {
  double spread = 0;
  for (const auto& full : trials) {
    if (!full.ok || full.round != 2) continue;
    const Trial* short_one = trial_of(trials, full.candidate, 1);
    if (short_one && short_one->samples_per_s > 0) {
      spread = std::max(spread, std::abs(full.samples_per_s / short_one->samples_per_s - 1));
    }
  }
  return spread;
}

IntervalWidth interval_width(double model_error, double seed_spread, double trial_noise) {
  IntervalWidth w{0.02, "the floor of 2%"};
  if (model_error > w.half) w = {model_error, fmt::format("the model's median error on the trials, {:.1f}%", model_error * 100)};
  if (seed_spread > w.half) w = {seed_spread, fmt::format("the model's spread over seeds, {:.1f}%", seed_spread * 100)};
  if (trial_noise > w.half) {
    w = {trial_noise, fmt::format("one config's two trials here differed by {:.1f}%", trial_noise * 100)};
  }
  return w;
}

std::optional<Choice> choose(const std::vector<Trial>& trials, double tolerance, const PrefetchCost& cost,
                             const std::vector<Prediction>* model, double noise_cap) {
  // The latest (longest) round of each candidate speaks for it.
  std::map<std::tuple<int, int, bool>, Trial> latest;
  for (const auto& t : trials) {
    if (!t.ok) continue;
    auto [it, inserted] = latest.emplace(key(t.candidate), t);
    if (!inserted && t.round >= it->second.round) it->second = t;
  }
  if (latest.empty()) return std::nullopt;
  // Compare like with like: only the highest round reached, when it has any.
  int top_round = 0;
  for (const auto& [k, t] : latest) top_round = std::max(top_round, t.round);
  std::vector<Trial> pool;
  for (const auto& [k, t] : latest) {
    if (t.round == top_round) pool.push_back(t);
  }
  const Trial best = *std::max_element(pool.begin(), pool.end(), [](const Trial& a, const Trial& b) {
    return a.samples_per_s < b.samples_per_s;
  });
  Trial chosen = best;
  for (const auto& t : pool) {
    if (t.samples_per_s >= (1 - tolerance) * best.samples_per_s && preferred(t.candidate, chosen.candidate, cost)) {
      chosen = t;
    }
  }
  // Within the trials' own noise, the model refitted to them decides. The
  // short-to-full gap also holds a short window's start-up (the incident's
  // FUSE job read 10% higher in 6 s than in 10 s at every config), so for
  // a job the noise counts for at most twice the tolerance (`noise_cap`).
  const double cap = noise_cap > 0 ? noise_cap : 2 * tolerance;
  const double spread = model ? std::min(repeat_spread(trials), cap) : 0;
  const double best_model = model ? predicted(*model, best.candidate) : 0;
  bool by_model = false;
  for (const auto& t : pool) {
    if (spread > 0 && best_model > 0 && t.samples_per_s >= (1 - tolerance - spread) * best.samples_per_s &&
        predicted(*model, t.candidate) >= (1 - tolerance) * best_model && preferred(t.candidate, chosen.candidate, cost)) {
      chosen = t;
      by_model = true;
    }
  }
  Choice c{chosen, best, {}};
  // A shallower prefetch that also came within the tolerance, passed over
  // because the deeper one's memory is free.
  const Trial* shallower = nullptr;
  for (const auto& t : pool) {
    if (t.candidate.workers == chosen.candidate.workers && t.candidate.prefetch_factor < chosen.candidate.prefetch_factor &&
        t.samples_per_s >= (1 - tolerance) * best.samples_per_s &&
        (!shallower || t.candidate.prefetch_factor < shallower->candidate.prefetch_factor)) {
      shallower = &t;
    }
  }
  if (by_model) {
    c.reason = fmt::format("{} measured {:.0f} samples/s per rank against the best's {:.0f} ({}), within the {:g}% "
                           "tolerance plus the trials' own noise here ({:.1f}%: one config's two trials, counted up to {:g}%); "
                           "the model, "
                           "refitted to these trials, predicts {:.0f} against {:.0f}: the cheaper config gives up nothing "
                           "the trials can show",
                           describe(chosen.candidate), chosen.samples_per_s, best.samples_per_s, describe(best.candidate),
                           tolerance * 100, spread * 100, cap * 100, predicted(*model, chosen.candidate), best_model);
  } else if (key(chosen.candidate) == key(best.candidate)) {
    c.reason = fmt::format("{} measured the highest throughput, {:.0f} samples/s per rank, and no cheaper config came "
                           "within {:g}% of it",
                           describe(chosen.candidate), best.samples_per_s, tolerance * 100);
  } else {
    c.reason = fmt::format("{} measured {:.0f} samples/s per rank, within {:g}% of the best ({}: {:.0f}/s), "
                           "with {} workers instead of {} and prefetch {} instead of {}",
                           describe(chosen.candidate), chosen.samples_per_s, tolerance * 100, describe(best.candidate),
                           best.samples_per_s, chosen.candidate.workers, best.candidate.workers,
                           chosen.candidate.prefetch_factor, best.candidate.prefetch_factor);
  }
  if (shallower) {
    c.reason += fmt::format("; prefetch {} rather than {}: its {:.1f} MiB of page-locked memory is under the {:.0f} MiB "
                            "per rank that count as free, and a deeper queue absorbs slow batches",
                            chosen.candidate.prefetch_factor, shallower->candidate.prefetch_factor,
                            cost.bytes(chosen.candidate) / (1024.0 * 1024), cost.free_bytes / (1024.0 * 1024));
  }
  return c;
}

namespace {

// The best full trial (none: no full trial succeeded).
std::optional<Trial> best_full_trial(const std::vector<Trial>& trials) {
  std::optional<Trial> best;
  for (const auto& t : trials) {
    if (t.ok && t.round == 2 && (!best || t.samples_per_s > best->samples_per_s)) best = t;
  }
  return best;
}

// Past the edge of what was tried: while the best full trial has the most
// workers any full trial had, and its workers are not CPU-bound, a full
// trial of the ladder's next worker count, up to the cap. Growth stops when
// a step gains less than the tolerance (more workers stop helping), when
// the trials turn CPU-bound (more only contend for the cores), or at the cap
// (the report then says the cap limited the result).
void grow_past_the_edge(TrialLog& log, const SearchOptions& options) {
  auto& result = log.result;
  for (;;) {
    const auto best = best_full_trial(result.trials);
    if (!best) return;
    int top = 0;
    for (const auto& t : result.trials) {
      if (t.ok && t.round == 2) top = std::max(top, t.candidate.workers);
    }
    if (best->candidate.workers != top) return;  // the best is inside what was tried
    const int next = next_worker_step(top);
    const int cap = options.worker_cap > 0 ? options.worker_cap : top;
    if (options.worker_cap <= 0) return;  // no growth asked for
    if (next == 0 || next > cap) {
      result.limited_by_cap = next != 0;
      result.edge = fmt::format("the best config has {} workers, the most allowed (the cap)", top);
      return;
    }
    if (options.cpu_bound && options.cpu_bound(result.trials)) {
      result.edge = fmt::format("not grown past {} workers: the trials are CPU-bound, and more workers would only "
                                "contend for the cores",
                                top);
      return;
    }
    Candidate c = best->candidate;
    c.workers = next;
    const auto t = log.run(c, options.full, 2);
    if (!t) return;
    result.grew_to.push_back(next);
    if (!t->ok || t->samples_per_s < (1 + options.tolerance) * best->samples_per_s) {
      result.edge = fmt::format("stopped growing at {} workers: {} workers gained less than {:g}%", top, next,
                                options.tolerance * 100);
      return;
    }
  }
}

}  // namespace

SearchResult model_search(const std::vector<Prediction>& predictions, const SearchSpace& space, TrialRunner& runner,
                          const SearchOptions& options) {
  TrialLog log(runner, options);
  // Round 1: the shortlist, briefly.
  std::vector<Trial> first;
  for (const auto& c : shortlist(predictions, space, options.shortlist, options.prefetch_cost)) {
    auto t = log.run(c, options.short_round, 1);
    if (!t) break;
    if (t->ok) first.push_back(*t);
  }
  // A short trial that ran out of time before the job printed a figure
  // (8 workers of the incident's job on FUSE, once, in 6 s) rules nothing
  // out: the model's favourite still gets its full trial when it was one.
  // From here on the model as refitted to the short round, when it can be.
  std::vector<Prediction> model = predictions;
  bool refitted = false;
  if (options.refit) {
    if (auto again = options.refit(log.result.trials); !again.empty()) {
      model = std::move(again);
      refitted = true;
    }
  }
  const auto ranked = ranked_by_model(model, options.prefetch_cost);
  const auto favourite =
      ranked.empty() ? std::nullopt : model_pick(ranked, ranked.front().candidate.workers, options.prefetch_cost);
  const bool favourite_short_ran = favourite && any_trial_of(log.result.trials, *favourite, [](const Trial& t) {
    return t.round == 1 && (t.ok || t.too_short);
  });
  if (first.empty() && favourite_short_ran) log.run(*favourite, options.full, 2);
  // Round 2: a full trial for the round-1 best, then for the preferred
  // (cheapest) configs near it, cheapest first, until one comes within the
  // tolerance of the best's full trial (at most two of them). Short rounds
  // are noisy: the runner-up by throughput is often no cheaper than the
  // best, and then a cheaper config never gets the full trial that choose()
  // compares. "Near" allows twice the tolerance for that noise.
  if (!first.empty()) {
    std::sort(first.begin(), first.end(), [](const Trial& a, const Trial& b) { return a.samples_per_s > b.samples_per_s; });
    const Candidate best = first.front().candidate;
    const double near = first.front().samples_per_s * (1 - 2 * options.tolerance);
    std::vector<Candidate> cheaper_ones;
    for (const auto& t : first) {
      if (t.samples_per_s >= near && preferred(t.candidate, best, options.prefetch_cost)) cheaper_ones.push_back(t.candidate);
    }
    std::sort(cheaper_ones.begin(), cheaper_ones.end(),
              [&](const Candidate& a, const Candidate& b) { return preferred(a, b, options.prefetch_cost); });
    // The best is the cheapest near the top: its runner-up (within 10%)
    // checks it, and gives the calibration a second full trial. A costlier
    // runner-up that the refitted model puts below the best is no check:
    // a full trial of it can only win by the noise of one trial (the local
    // incident's job on 2 cores: 6 workers over 2, measured 508 against 460,
    // where paired runs give 2 workers 600 and 6 workers 490). A cheaper
    // runner-up is no check either when the refitted model also puts it
    // more than 10% below: the short round and the model agree, and only
    // both being wrong at once could make it the choice. A full trial of it
    // would cost a job's search a large share of its time for a config
    // both measures rule out.
    const double margin = std::max(0.10, 3 * options.tolerance);
    const double cut = first.front().samples_per_s * (1 - margin);
    auto ruled_out = [&](const Candidate& c) {
      if (!refitted) return false;
      const double below = preferred(c, best, options.prefetch_cost) ? margin : options.tolerance;
      return predicted(model, c) < (1 - below) * predicted(model, best);
    };
    for (std::size_t i = 1; cheaper_ones.empty() && i < first.size() && first[i].samples_per_s >= cut; ++i) {
      if (!ruled_out(first[i].candidate)) cheaper_ones.push_back(first[i].candidate);
    }
    const auto full_best = log.run(best, options.full, 2);
    for (std::size_t i = 0; full_best && i < std::min<std::size_t>(2, cheaper_ones.size()); ++i) {
      const auto t = log.run(cheaper_ones[i], options.full, 2);
      if (!t || (t->ok && full_best->ok && t->samples_per_s >= (1 - options.tolerance) * full_best->samples_per_s)) break;
    }
    // The model's favourite, where the short round put another config
    // first although the model sees a clear gain (3x the tolerance) for it:
    // one short trial of a job is noisy (start-up, an epoch's drain in a few
    // seconds' window), and dropping a config on it alone once chose 6
    // workers for the incident where 8 ran 30% faster.
    const bool favourite_full_ran =
        favourite && any_trial_of(log.result.trials, *favourite, [](const Trial& t) { return t.round == 2; });
    if (full_best && favourite && !(*favourite == best) && favourite_short_ran && !favourite_full_ran &&
        predicted(model, *favourite) >= (1 + 3 * options.tolerance) * predicted(model, best)) {
      log.run(*favourite, options.full, 2);
    }
    // The same for the model before any refit, where the short round
    // measured nothing of its favourite (the trial ran out of time): a
    // refit to the few short trials that did measure can rank it anywhere.
    // On bench/tune_incident.py's FUSE job, cold from the page cache, 8, 6
    // and 4 workers printed nothing in their short trials, the refit to
    // 3 workers' trial kept 8 from its full trial, and --exec chose 3
    // workers (47 samples/s, where 8 ran at 108).
    if (refitted && full_best) {
      const auto raw_ranked = ranked_by_model(predictions, options.prefetch_cost);
      const auto raw_favourite = raw_ranked.empty() ? std::nullopt
                                                    : model_pick(raw_ranked, raw_ranked.front().candidate.workers,
                                                                 options.prefetch_cost);
      const bool unmeasured = raw_favourite && any_trial_of(log.result.trials, *raw_favourite, [](const Trial& t) {
        return t.round == 1 && t.too_short;
      }) && !any_trial_of(log.result.trials, *raw_favourite, [](const Trial& t) { return t.ok || t.round == 2; });
      if (unmeasured && !(*raw_favourite == best) &&
          predicted(predictions, *raw_favourite) >= (1 + 3 * options.tolerance) * predicted(predictions, best)) {
        log.run(*raw_favourite, options.full, 2);
      }
    }
    // One step down the knee: the chosen config's next fewer workers, when
    // no trial has ruled that worker count out (never tried, its short
    // trial ran out of time, or was near the chosen one's). A model misled
    // by a noisy measurement can leave the cheaper config out of the
    // shortlist, and the rule "cheapest within the tolerance" can only pick
    // among configs that were tried. The short trials are compared by
    // worker count: a refitted model can prefer another prefetch than the
    // one the short round tried, and a worker count whose short trial read
    // well below the best's is not worth a full trial at another prefetch.
    const auto so_far = choose(log.result.trials, options.tolerance, options.prefetch_cost, refitted ? &model : nullptr,
                               options.noise_cap);
    const int wi = so_far ? index_of(space.workers, so_far->chosen.candidate.workers) : -1;
    if (wi > 0) {
      const auto fewer = model_pick(ranked, space.workers[static_cast<std::size_t>(wi - 1)], options.prefetch_cost);
      const double fewer_short = fewer ? best_short_at(log.result.trials, fewer->workers) : 0;
      const double chosen_short = best_short_at(log.result.trials, so_far->chosen.candidate.workers);
      const bool failed =
          fewer && any_trial_of(log.result.trials, *fewer, [](const Trial& t) { return !t.ok && !t.too_short; });
      const bool slower = fewer_short > 0 && chosen_short > 0 && fewer_short < (1 - 2 * options.tolerance) * chosen_short;
      if (fewer && !failed && !slower && !trial_of(log.result.trials, *fewer, 2)) log.run(*fewer, options.full, 2);
    }
  }
  grow_past_the_edge(log, options);
  // The choice, with the model refitted to every trial as its tie-breaker.
  if (options.refit) log.result.refitted = options.refit(log.result.trials);
  log.result.choice = choose(log.result.trials, options.tolerance, options.prefetch_cost,
                             log.result.refitted.empty() ? nullptr : &log.result.refitted, options.noise_cap);
  return log.result;
}

SearchResult grid_search(const SearchSpace& space, TrialRunner& runner, const SearchOptions& options) {
  TrialLog log(runner, options);
  for (const auto& c : space.candidates()) {
    if (!log.run(c, options.full, 2)) break;
  }
  // Full trials only: no short-to-full noise, so the model breaks no tie;
  // it is kept for the figures that follow the choice.
  if (options.refit) log.result.refitted = options.refit(log.result.trials);
  log.result.choice = choose(log.result.trials, options.tolerance, options.prefetch_cost);
  return log.result;
}

}  // namespace gpufeed::tune
