#pragma once
// The model's verdicts that tune turns into its report and config: every
// candidate predicted, the preferred one, the model's spread over seeds,
// and the environment and cache advice. Pure: the caller measured the
// workload and knows the machine.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpufeed/tune/config.hpp"
#include "gpufeed/tune/dataloader_model.hpp"
#include "gpufeed/tune/search.hpp"

namespace gpufeed::tune {

// Steps per simulated rank when tune ranks candidates: enough for the
// step-time spread to average out, few enough to simulate every candidate.
inline constexpr int kModelSteps = 150;

// Every candidate of `space` whose page-locked memory fits `mem_per_rank`
// (0: no limit), simulated; the others are described in `excluded`.
std::vector<Prediction> predict_all(const Workload& w, const NodeShape& node, const SearchSpace& space,
                                    std::uint64_t mem_per_rank, std::vector<std::string>& excluded);

// The preferred prediction within `tolerance` of the best prediction.
Prediction best_predicted(const std::vector<Prediction>& predictions, double tolerance, const PrefetchCost& cost);

// The model's lowest and highest figure for `c` over five seeds.
std::pair<double, double> seed_interval(const Workload& w, const NodeShape& node, const Candidate& c);

// Where an SSD cache tier would live, and its free bytes (0: unknown).
struct ScratchSpace {
  std::string path;
  std::uint64_t free_bytes = 0;
};

// Memory and SSD cache tiers, advised only when the model predicts a gain of
// at least 10% at `c` over `baseline` samples/s.
std::vector<CacheAdvice> cache_advice(const Workload& w, const NodeShape& node, const Candidate& c,
                                      std::uint64_t dataset_bytes, double mean_sample_bytes,
                                      std::uint64_t memory_budget, double baseline, const ScratchSpace& scratch);

// OMP_NUM_THREADS=1 when CPU-bound workers fill the worker cores.
std::vector<EnvAdvice> environment_advice(const Workload& w, const NodeShape& node, const Candidate& c);

}  // namespace gpufeed::tune
