#pragma once
// `gpufeed bench --storage-only`: how a store answers stat, open and read at
// rising concurrency. Each access is stat, then open, then a whole read of
// one sample, as a DataLoader worker does; each level walks samples the
// previous levels did not touch while the dataset allows, so the page cache
// flatters local files as little as it can.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpufeed/loader/sample_source.hpp"

namespace gpufeed::loader {

struct OpLatency {
  std::uint64_t count = 0;
  double mean_ms = 0, p50_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;
};
OpLatency summarise_latencies(std::vector<double> ms);

struct StorageLevel {
  int concurrency = 0;
  OpLatency stat, open, read;
  std::uint64_t samples = 0;  // whole accesses completed
  std::uint64_t bytes = 0;
  std::uint64_t errors = 0;
  double wall_s = 0;
  double mb_per_s = 0;        // read bytes / wall time (1 MB = 10^6 B)
  double samples_per_s = 0;   // accesses / wall time ("IOPS" per sample read)
  bool ran_on = false;        // ran past its time budget for min_samples_per_level
  std::vector<double> read_ms;  // every read's latency, sorted
  // Every access's stat, open and read latencies, in the order they ran:
  // tune's storage model sums what the job's access pattern calls.
  struct Access {
    double stat_ms = 0, open_ms = 0, read_ms = 0;
  };
  std::vector<Access> accesses;
};

// "stat-open-read", "open-read", or the counts ("2 stat + 1 open + read").
std::string describe(const AccessPattern& a);
// Each access's latency under `pattern`, sorted.
std::vector<double> access_latencies(const StorageLevel& level, const AccessPattern& pattern);

struct StorageTable {
  std::string source;
  std::string storage_type;
  std::uint64_t dataset_samples = 0;
  std::uint64_t dataset_bytes = 0;
  bool samples_reused = false;  // the dataset was smaller than the levels needed
  std::vector<StorageLevel> levels;
};

struct StorageProbeOptions {
  std::vector<int> concurrency{1, 4, 16, 64};
  std::chrono::milliseconds per_level{2000};  // time budget of each level
  std::uint64_t max_samples_per_level = 2000;
  // A level whose time is up before it completed this many accesses runs on
  // until it has, for at most `per_level` x `overrun_factor` in all: one
  // stall in a short level (tune's FUSE incident once read 3 samples at
  // p50 348 ms in 1 s, where 12 and more read 65 ms) is a figure of the
  // stall, not of the store. 0: the time budget alone ends a level.
  std::uint64_t min_samples_per_level = 0;
  double overrun_factor = 3;
  std::function<void(const StorageLevel&)> on_level;  // progress
  const std::atomic<bool>* stop = nullptr;
};

StorageTable measure_storage(SampleSource& source, const std::vector<SampleInfo>& samples,
                             const StorageProbeOptions& options);

}  // namespace gpufeed::loader
