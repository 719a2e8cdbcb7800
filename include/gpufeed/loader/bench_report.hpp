#pragma once
// What `gpufeed bench` prints and writes (schema gpufeed.bench/v1): the run's
// set-up, the loader's figures, and for --storage-only the storage table.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "gpufeed/document.hpp"
#include "gpufeed/loader/pipeline.hpp"
#include "gpufeed/loader/storage_table.hpp"
#include "gpufeed/text.hpp"

namespace gpufeed::loader {

struct BenchSetup {
  std::string source;        // describe() of the (cached) source
  std::string storage_type;
  std::uint64_t dataset_samples = 0;
  std::string transform;
  std::size_t sample_bytes = 0;  // in the batch buffer
  std::string device;        // backend name
  std::string device_detail; // description()
  std::string device_why;    // why it was chosen (auto)
  std::string step;
  std::string worker_cpus;   // cpulist the workers were bound to; empty: not bound
  LoaderConfig config;
};

struct BenchReport {
  BenchSetup setup;
  LoaderFigures figures;
  std::vector<TierStats> tiers;
  std::uint64_t peak_rss_bytes = 0;
  std::vector<std::string> notes;
};

Json to_json(const BenchReport& report);
void render_text(const BenchReport& report, const TextStyle& style, bool verbose, std::ostream& out);

Json to_json(const StorageTable& table);
void render_text(const StorageTable& table, const TextStyle& style, std::ostream& out);

// The one-line progress shown on a terminal while the loader runs.
std::string progress_line(const Progress& p);

}  // namespace gpufeed::loader
