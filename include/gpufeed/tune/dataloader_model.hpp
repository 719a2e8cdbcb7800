#pragma once
// A model of PyTorch DataLoader throughput (docs/tune.md): Little's-law
// bounds and a discrete-event simulation of the DataLoader's semantics for
// all ranks of a node at once, sharing cores and storage. Driven by measured
// distributions; used by `tune` to rank candidate configs before trials.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace gpufeed::tune {

// An empirical distribution in milliseconds (draws pick a stored value), or
// a constant when it holds one value. Empty means zero.
class Distribution {
 public:
  Distribution() = default;
  explicit Distribution(std::vector<double> values_ms);
  static Distribution constant(double ms);
  // `n` quantiles of a log-normal with this median and shape.
  static Distribution lognormal(double median_ms, double sigma, int n = 512);
  double draw(std::mt19937_64& rng) const;
  double mean() const { return mean_; }
  double quantile(double q) const;
  bool empty() const { return values_.empty(); }
  const std::vector<double>& values() const { return values_; }
  Distribution scaled(double k) const;  // every value times k: the same shape, k times the mean

 private:
  std::vector<double> values_;  // sorted
  double mean_ = 0;
};

// Per-sample fetch latency as the store answers at each concurrency
// (outstanding fetches across the node), from `bench --storage-only`.
struct StorageModel {
  struct Level {
    int concurrency = 1;
    Distribution latency;
  };
  std::vector<Level> levels;  // by rising concurrency
  // The latency at `concurrency`: the measured level at or above it (the
  // highest level beyond the last).
  const Distribution& at(int concurrency) const;
};

// A store does not answer faster under more load: a level whose mean is
// below a lower level's is the noise of a short measurement (1 s gives a
// few dozen samples at concurrency 1). Such neighbours are pooled
// (pool-adjacent-violators on the means, weighted by their sample counts),
// so the means rise with concurrency and each pooled level has more samples.
// Returns how many levels were pooled into a neighbour (0: unchanged).
int pool_where_faster_under_load(StorageModel& storage);

struct Workload {
  StorageModel storage;
  Distribution cpu_ms;        // per-sample CPU work on one core (decode, transform)
  // How much longer each sample's CPU work takes when every worker core is
  // busy at once than when one is (shared caches, memory bandwidth, SMT
  // siblings on a VM): 1 = none. The simulation scales linearly between.
  double cpu_slowdown_all_cores = 1;
  Distribution step_ms;       // the training step per batch
  int batch_size = 32;
  double batch_bytes = 0;     // collated batch size
  double pin_gb_per_s = 0;    // pin-memory copy bandwidth (0: free)
  double pageable_h2d_penalty_ms = 0;  // extra step time per batch without pin_memory
  // CPU the training loop's process spends per batch before its step can
  // start (receiving and unpickling the batch, Python): it shares the cores
  // with the workers, so more workers can slow the loop. Empty: none.
  Distribution loop_cpu_ms;
  // Batches in an epoch (samples / batch, drop_last): PyTorch's iterator
  // issues only its epoch's batches, so the pipeline drains at each epoch's
  // end and refills after its last step. 0: endless (no epochs).
  std::uint64_t batches_per_epoch = 0;
};

struct NodeShape {
  int ranks = 1;
  double worker_cores = 1;  // cores all ranks' workers share
};

struct Candidate {
  int workers = 1;
  int prefetch_factor = 2;
  bool pin_memory = true;
  bool operator==(const Candidate&) const = default;
};
std::string describe(const Candidate& c);  // "8 workers, prefetch 2, pin"

struct Prediction {
  Candidate candidate;
  double samples_per_s = 0;       // per rank, steady state
  double node_samples_per_s = 0;  // all ranks
  double starvation = 0;          // step waiting / wall
  double mean_ready = 0;          // batches ready when the step asks
  double bound_samples_per_s = 0; // Little's-law bound per rank
  std::uint64_t pinned_bytes = 0; // node-wide, ranks x W x P x batch bytes
};

struct SimOptions {
  int steps = 200;           // measured steps per rank
  int warmup_steps = -1;     // -1: prefetch x workers
  std::uint64_t seed = 1;
};

// Per-rank upper bound in samples/s: min(workers / (fetch + CPU per sample),
// cores / ranks / CPU per sample, batch / step, batch / pin time), with the
// fetch latency of one fetch at a time.
double littles_law_bound(const Workload& w, const NodeShape& node, const Candidate& c);

Prediction simulate(const Workload& w, const NodeShape& node, const Candidate& c, const SimOptions& options = {});

}  // namespace gpufeed::tune
