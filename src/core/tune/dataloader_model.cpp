// Little's-law bounds and the discrete-event simulation of DataLoader
// semantics (dataloader_model.hpp, docs/tune.md).
#include "gpufeed/tune/dataloader_model.hpp"

#include <fmt/format.h>

#include "gpufeed/stats.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <queue>
#include <set>

namespace gpufeed::tune {

Distribution::Distribution(std::vector<double> values_ms) : values_(std::move(values_ms)) {
  std::sort(values_.begin(), values_.end());
  mean_ = values_.empty() ? 0 : std::accumulate(values_.begin(), values_.end(), 0.0) / static_cast<double>(values_.size());
}

Distribution Distribution::constant(double ms) { return Distribution({ms}); }

Distribution Distribution::scaled(double k) const {
  std::vector<double> v = values_;
  for (auto& x : v) x *= k;
  return Distribution(std::move(v));
}

Distribution Distribution::lognormal(double median_ms, double sigma, int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) {  // mid-point quantiles
    v.push_back(median_ms * std::exp(sigma * inverse_normal_cdf((i + 0.5) / n)));
  }
  return Distribution(std::move(v));
}

double Distribution::draw(std::mt19937_64& rng) const {
  if (values_.empty()) return 0;
  if (values_.size() == 1) return values_[0];
  return values_[std::uniform_int_distribution<std::size_t>(0, values_.size() - 1)(rng)];
}

double Distribution::quantile(double q) const { return quantile_sorted(values_, q); }

const Distribution& StorageModel::at(int concurrency) const {
  static const Distribution kZero;
  if (levels.empty()) return kZero;
  for (const auto& l : levels) {
    if (l.concurrency >= concurrency) return l.latency;
  }
  return levels.back().latency;
}

int pool_where_faster_under_load(StorageModel& storage) {
  struct Block {
    std::size_t first, last;  // levels [first, last]
    std::vector<double> values;
    double mean() const {
      return values.empty() ? 0 : std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
    }
  };
  std::vector<Block> blocks;
  for (std::size_t i = 0; i < storage.levels.size(); ++i) {
    blocks.push_back({i, i, storage.levels[i].latency.values()});
    // Merge backwards while the newest block is faster than the one before.
    while (blocks.size() > 1 && blocks.back().mean() < blocks[blocks.size() - 2].mean()) {
      Block top = std::move(blocks.back());
      blocks.pop_back();
      Block& below = blocks.back();
      below.values.insert(below.values.end(), top.values.begin(), top.values.end());
      below.last = top.last;
    }
  }
  int pooled = 0;
  for (const auto& b : blocks) {
    if (b.first == b.last) continue;
    pooled += static_cast<int>(b.last - b.first);
    const Distribution merged(b.values);
    for (std::size_t i = b.first; i <= b.last; ++i) storage.levels[i].latency = merged;
  }
  return pooled;
}

std::string describe(const Candidate& c) {
  return fmt::format("{} workers, prefetch {}, {}", c.workers, c.prefetch_factor, c.pin_memory ? "pinned" : "not pinned");
}

double littles_law_bound(const Workload& w, const NodeShape& node, const Candidate& c) {
  // The lowest measured latency (one fetch at a time): an upper bound, since
  // the store only slows down as concurrency rises.
  const double fetch = w.storage.at(1).mean();
  const double cpu = w.cpu_ms.mean();
  const double inf = std::numeric_limits<double>::infinity();
  const double per_sample = fetch + cpu;
  const double by_workers = per_sample > 0 ? c.workers / per_sample * 1e3 : inf;
  const double by_cores =
      cpu > 0 ? node.worker_cores / node.ranks / (cpu * std::max(1.0, w.cpu_slowdown_all_cores)) * 1e3 : inf;
  const double by_step = w.step_ms.mean() > 0 ? w.batch_size / w.step_ms.mean() * 1e3 : inf;
  double by_pin = inf;
  if (c.pin_memory && w.pin_gb_per_s > 0 && w.batch_bytes > 0) {
    by_pin = w.batch_size / (w.batch_bytes / (w.pin_gb_per_s * 1e6)) * 1e3;
  }
  return std::min({by_workers, by_cores, by_step, by_pin});
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum class EventKind { FetchDone, PinDone, StepDone };

struct Event {
  double time;
  EventKind kind;
  int id;  // worker (global) or rank
  bool operator>(const Event& o) const { return time > o.time; }
};

struct Worker {
  int rank = 0;
  std::deque<std::uint64_t> queue;
  bool busy = false;
  std::uint64_t batch = 0;
  int position = 0;
};

struct Rank {
  std::uint64_t next_issue = 0;
  std::uint64_t issue_limit = UINT64_MAX;  // the end of the loop's epoch
  int in_flight = 0;
  std::set<std::uint64_t> built;   // by workers, not yet pinned
  std::set<std::uint64_t> ready;   // pinned (or built, without pin_memory)
  std::uint64_t next_pin = 0;
  bool pin_busy = false;
  std::uint64_t next_step = 0;
  bool step_busy = false;
  double asked_at = 0;
  int steps_done = 0;
  // Measured window.
  double window_start = -1, window_end = 0, waited = 0;
  double ready_sum = 0;
  int ready_samples = 0;
};

class Simulation {
 public:
  Simulation(const Workload& w, const NodeShape& node, const Candidate& c, const SimOptions& o)
      : w_(w), node_(node), c_(c), o_(o), rng_(o.seed),
        warmup_(o.warmup_steps >= 0 ? o.warmup_steps : c.workers * c.prefetch_factor),
        per_epoch_(w.batches_per_epoch), steps_(measured_steps(o.steps, w.batches_per_epoch)),
        ranks_(static_cast<std::size_t>(node.ranks)),
        workers_(static_cast<std::size_t>(node.ranks * c.workers)) {
    for (std::size_t g = 0; g < workers_.size(); ++g) workers_[g].rank = static_cast<int>(g) / c.workers;
    if (per_epoch_ > 0) {
      for (auto& r : ranks_) r.issue_limit = per_epoch_;
    }
  }

  // The window holds whole epochs, so each epoch's drain counts once per
  // epoch; beyond kWholeEpochs batches an epoch's drain (about one batch's
  // build time) is under a percent of it and the window stays as asked.
  static int measured_steps(int asked, std::uint64_t per_epoch) {
    constexpr std::uint64_t kWholeEpochs = 1000;
    if (per_epoch == 0 || per_epoch > kWholeEpochs) return asked;
    const auto epochs = (static_cast<std::uint64_t>(asked) + per_epoch - 1) / per_epoch;
    return static_cast<int>(epochs * per_epoch);
  }

  Prediction run() {
    for (int r = 0; r < node_.ranks; ++r) {
      for (int i = 0; i < c_.workers * c_.prefetch_factor; ++i) issue(r);
    }
    const int target = warmup_ + steps_;
    while (!std::all_of(ranks_.begin(), ranks_.end(), [&](const Rank& r) { return r.steps_done >= target; })) {
      if (!advance()) break;  // nothing left to happen: cannot progress
    }
    return prediction();
  }

 private:
  // --- time and the shared CPU (processor sharing) -----------------------------
  // Each CPU job's speed: a fair share of the cores when they are
  // oversubscribed, and slower per core as more of them are busy.
  double rate() const {
    const auto n = static_cast<double>(cpu_.size());
    if (n <= 0) return 1.0;
    const double cores = node_.worker_cores;
    const double busy = std::min(n, cores);
    const double slowdown =
        cores > 1 && busy > 1 ? 1 + (std::max(1.0, w_.cpu_slowdown_all_cores) - 1) * (busy - 1) / (cores - 1) : 1.0;
    return std::min(1.0, cores / n) / slowdown;
  }

  bool advance() {
    const double next_fixed = events_.empty() ? kInf : events_.top().time;
    const double next_cpu = cpu_.empty() ? kInf : now_ + (cpu_.top().first - virtual_) / rate();
    const double t = std::min(next_fixed, next_cpu);
    if (t == kInf) return false;
    virtual_ += (t - now_) * rate();
    now_ = t;
    if (next_cpu <= next_fixed) {
      const int g = cpu_.top().second;
      cpu_.pop();
      if (g < 0) {
        start_step(-g - 1);  // a rank's loop finished its CPU work for the batch
      } else {
        sample_done(g);
      }
    } else {
      const Event e = events_.top();
      events_.pop();
      switch (e.kind) {
        case EventKind::FetchDone: fetch_done(e.id); break;
        case EventKind::PinDone: pin_done(e.id); break;
        case EventKind::StepDone: step_done(e.id); break;
      }
    }
    return true;
  }

  // --- issuing: round-robin, at most prefetch x workers in flight -----------------
  // Only batches of the loop's epoch, round robin from worker 0 in each
  // epoch (PyTorch's iterator: _try_put_index, _reset).
  void issue(int r) {
    Rank& rank = ranks_[static_cast<std::size_t>(r)];
    if (rank.next_issue >= rank.issue_limit) return;
    const std::uint64_t batch = rank.next_issue++;
    const std::uint64_t in_epoch = per_epoch_ ? batch % per_epoch_ : batch;
    const int g = r * c_.workers + static_cast<int>(in_epoch % static_cast<std::uint64_t>(c_.workers));
    workers_[static_cast<std::size_t>(g)].queue.push_back(batch);
    ++rank.in_flight;
    start_next_batch(g);
  }

  // --- workers: whole batches, one sample after another ---------------------------
  void start_next_batch(int g) {
    Worker& wk = workers_[static_cast<std::size_t>(g)];
    if (wk.busy || wk.queue.empty()) return;
    wk.busy = true;
    wk.batch = wk.queue.front();
    wk.queue.pop_front();
    wk.position = 0;
    start_fetch(g);
  }

  void start_fetch(int g) {
    ++outstanding_fetches_;
    const double latency = w_.storage.at(outstanding_fetches_).draw(rng_);
    events_.push({now_ + latency, EventKind::FetchDone, g});
  }

  void fetch_done(int g) {
    --outstanding_fetches_;
    const double work = w_.cpu_ms.draw(rng_);
    if (work <= 0) {
      sample_done(g);
      return;
    }
    cpu_.push({virtual_ + work, g});
  }

  void sample_done(int g) {
    Worker& wk = workers_[static_cast<std::size_t>(g)];
    if (++wk.position < w_.batch_size) {
      start_fetch(g);
      return;
    }
    wk.busy = false;
    ranks_[static_cast<std::size_t>(wk.rank)].built.insert(wk.batch);
    start_next_batch(g);
    try_pin(wk.rank);
    try_step(wk.rank);
  }

  // --- the main process: pin thread, then the step, in batch order -----------------
  void try_pin(int r) {
    Rank& rank = ranks_[static_cast<std::size_t>(r)];
    while (!rank.pin_busy && rank.built.count(rank.next_pin)) {
      rank.built.erase(rank.next_pin);
      const double cost = c_.pin_memory && w_.pin_gb_per_s > 0 ? w_.batch_bytes / (w_.pin_gb_per_s * 1e6) : 0;
      if (cost > 0) {
        rank.pin_busy = true;
        events_.push({now_ + cost, EventKind::PinDone, r});
        return;
      }
      rank.ready.insert(rank.next_pin++);
    }
  }

  void pin_done(int r) {
    Rank& rank = ranks_[static_cast<std::size_t>(r)];
    rank.pin_busy = false;
    rank.ready.insert(rank.next_pin++);
    try_pin(r);
    try_step(r);
  }

  void try_step(int r) {
    Rank& rank = ranks_[static_cast<std::size_t>(r)];
    if (rank.step_busy || !rank.ready.count(rank.next_step)) return;
    rank.ready.erase(rank.next_step);
    const bool measured = rank.steps_done >= warmup_ && rank.steps_done < warmup_ + steps_;
    if (measured) {
      if (rank.window_start < 0) rank.window_start = rank.asked_at;
      rank.waited += now_ - rank.asked_at;
    }
    ++rank.next_step;
    rank.step_busy = true;
    --rank.in_flight;
    issue(r);
    // The loop's own CPU work for the batch runs on the shared cores first.
    const double loop_cpu = w_.loop_cpu_ms.draw(rng_);
    if (loop_cpu > 0) {
      cpu_.push({virtual_ + loop_cpu, -r - 1});
      return;
    }
    start_step(r);
  }

  void start_step(int r) {
    const double penalty = c_.pin_memory ? 0 : w_.pageable_h2d_penalty_ms;
    events_.push({now_ + w_.step_ms.draw(rng_) + penalty, EventKind::StepDone, r});
  }

  void step_done(int r) {
    Rank& rank = ranks_[static_cast<std::size_t>(r)];
    rank.step_busy = false;
    ++rank.steps_done;
    if (per_epoch_ > 0 && static_cast<std::uint64_t>(rank.steps_done) == rank.issue_limit) {
      // The epoch's last step is done: the next iterator primes its batches.
      rank.issue_limit += per_epoch_;
      for (int i = 0; i < c_.workers * c_.prefetch_factor; ++i) issue(r);
    }
    if (rank.steps_done == warmup_ + steps_) rank.window_end = now_;
    rank.asked_at = now_;
    if (rank.steps_done >= warmup_ && rank.steps_done < warmup_ + steps_) {
      rank.ready_sum += static_cast<double>(rank.ready.size() + rank.built.size());
      ++rank.ready_samples;
    }
    try_step(r);
  }

  Prediction prediction() const {
    Prediction p;
    p.candidate = c_;
    p.bound_samples_per_s = littles_law_bound(w_, node_, c_);
    p.pinned_bytes = static_cast<std::uint64_t>(node_.ranks * c_.workers * c_.prefetch_factor * w_.batch_bytes);
    double rate_sum = 0, starvation_sum = 0, ready_sum = 0;
    for (const auto& rank : ranks_) {
      const double window = rank.window_end - rank.window_start;
      const double samples = static_cast<double>(steps_) * w_.batch_size;
      rate_sum += window > 0 ? samples / window * 1e3 : p.bound_samples_per_s;
      starvation_sum += window > 0 ? rank.waited / window : 0;
      ready_sum += rank.ready_samples ? rank.ready_sum / rank.ready_samples : 0;
    }
    const auto n = static_cast<double>(ranks_.size());
    p.samples_per_s = rate_sum / n;
    p.node_samples_per_s = rate_sum;
    p.starvation = starvation_sum / n;
    p.mean_ready = ready_sum / n;
    return p;
  }

  const Workload& w_;
  const NodeShape& node_;
  const Candidate c_;
  const SimOptions& o_;
  std::mt19937_64 rng_;
  const int warmup_;
  const std::uint64_t per_epoch_;  // 0: no epochs
  const int steps_;                // measured steps per rank
  std::vector<Rank> ranks_;
  std::vector<Worker> workers_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  // CPU jobs keyed by the virtual time at which their work is done.
  std::priority_queue<std::pair<double, int>, std::vector<std::pair<double, int>>, std::greater<>> cpu_;
  double now_ = 0;
  double virtual_ = 0;
  int outstanding_fetches_ = 0;
};

}  // namespace

Prediction simulate(const Workload& w, const NodeShape& node, const Candidate& c, const SimOptions& options) {
  if (c.workers < 1 || c.prefetch_factor < 1 || node.ranks < 1 || w.batch_size < 1 || node.worker_cores <= 0) {
    Prediction p;
    p.candidate = c;
    return p;
  }
  return Simulation(w, node, c, options).run();
}

}  // namespace gpufeed::tune
