#include "gpufeed/tune/advice.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "gpufeed/units.hpp"

namespace gpufeed::tune {

std::vector<Prediction> predict_all(const Workload& w, const NodeShape& node, const SearchSpace& space,
                                    std::uint64_t mem_per_rank, std::vector<std::string>& excluded) {
  std::vector<Prediction> out;
  for (const auto& c : space.candidates()) {
    const auto pinned = static_cast<std::uint64_t>(c.workers * c.prefetch_factor * w.batch_bytes);
    if (mem_per_rank && pinned > mem_per_rank) {
      excluded.push_back(fmt::format("{} ({} > {} per rank)", describe(c), format_bytes(pinned), format_bytes(mem_per_rank)));
      continue;
    }
    SimOptions o;
    o.steps = kModelSteps;
    out.push_back(simulate(w, node, c, o));
  }
  return out;
}

Prediction best_predicted(const std::vector<Prediction>& predictions, double tolerance, const PrefetchCost& cost) {
  const auto best = *std::max_element(predictions.begin(), predictions.end(),
                                      [](const Prediction& a, const Prediction& b) { return a.samples_per_s < b.samples_per_s; });
  Prediction chosen = best;
  for (const auto& p : predictions) {
    if (p.samples_per_s >= (1 - tolerance) * best.samples_per_s && preferred(p.candidate, chosen.candidate, cost)) {
      chosen = p;
    }
  }
  return chosen;
}

std::pair<double, double> seed_interval(const Workload& w, const NodeShape& node, const Candidate& c) {
  double lo = 1e300, hi = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    SimOptions o;
    o.steps = kModelSteps;
    o.seed = seed;
    const auto p = simulate(w, node, c, o);
    lo = std::min(lo, p.samples_per_s);
    hi = std::max(hi, p.samples_per_s);
  }
  return {lo, hi};
}

std::vector<CacheAdvice> cache_advice(const Workload& w, const NodeShape& node, const Candidate& c,
                                      std::uint64_t dataset_bytes, double mean_sample_bytes,
                                      std::uint64_t memory_budget, double baseline, const ScratchSpace& scratch) {
  std::vector<CacheAdvice> out;
  if (dataset_bytes == 0 || baseline <= 0) return out;
  auto with_hits = [&](double hit, double hit_ms) {
    Workload cached = w;
    for (auto& level : cached.storage.levels) {
      std::vector<double> mixed;
      const auto& v = level.latency.values();
      for (std::size_t i = 0; i < v.size(); ++i) {
        mixed.push_back((static_cast<double>(i % 100) < hit * 100) ? hit_ms : v[i]);
      }
      level.latency = Distribution(std::move(mixed));
    }
    SimOptions o;
    o.steps = kModelSteps;
    return simulate(cached, node, c, o).samples_per_s;
  };
  // A random sampler hits a cache holding a fraction f of the dataset f of the time.
  const std::uint64_t mem_bytes = std::min<std::uint64_t>(dataset_bytes, memory_budget);
  if (mem_bytes > 0) {
    const double share = static_cast<double>(mem_bytes) / static_cast<double>(dataset_bytes);
    const double gain = with_hits(share, 0.02) / baseline;
    if (gain >= 1.10) {
      out.push_back({"memory", mem_bytes, static_cast<std::uint64_t>(static_cast<double>(mem_bytes) / std::max(1.0, mean_sample_bytes)),
                     share, gain,
                     fmt::format("the store's read latency (measured) dominates; a {} memory tier holds {:.0f}% of the "
                                 "dataset and the model predicts {:.2f}x samples/s from the second epoch on",
                                 format_bytes(mem_bytes), share * 100, gain)});
    }
  }
  const std::uint64_t disk_free = scratch.free_bytes;
  const std::uint64_t ssd_bytes = std::min<std::uint64_t>(dataset_bytes, disk_free / 2);
  if (ssd_bytes > 0) {
    const double share = static_cast<double>(ssd_bytes) / static_cast<double>(dataset_bytes);
    const double gain = with_hits(share, 0.15) / baseline;
    if (gain >= 1.10) {
      out.push_back({"ssd", ssd_bytes, 0, share, gain,
                     fmt::format("a local SSD tier ({} free on {}) can hold {:.0f}% of the dataset; the model predicts "
                                 "{:.2f}x samples/s from the second epoch on",
                                 format_bytes(disk_free), scratch.path, share * 100, gain)});
    }
  }
  return out;
}

std::vector<EnvAdvice> environment_advice(const Workload& w, const NodeShape& node, const Candidate& c) {
  std::vector<EnvAdvice> out;
  const double cpu = w.cpu_ms.mean();
  const double fetch = w.storage.at(1).mean();
  if (cpu > 0 && cpu >= fetch && c.workers * node.ranks >= node.worker_cores) {
    out.push_back({"OMP_NUM_THREADS", "1",
                   fmt::format("measured {:.2f} ms of CPU per sample against {:.2f} ms of fetch: the workers are CPU-bound, "
                               "and {} workers x {} ranks fill the {:.0f} worker cores, so intra-op threads in workers "
                               "would only oversubscribe them",
                               cpu, fetch, c.workers, node.ranks, node.worker_cores)});
  }
  return out;
}

}  // namespace gpufeed::tune
