#pragma once
// The built-in synthetic store: samples of a chosen size distribution whose
// stat, open and read take as long as a chosen storage tier would, for the
// demo and for tests without a dataset. `--data synthetic:PRESET,key=value...`
// Presets and their magnitudes are listed in docs/loader.md.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpufeed/loader/sample_source.hpp"

namespace gpufeed::loader {

// A latency as a log-normal distribution: median and shape (sigma of the
// log). sigma 0 is a constant; 1.0 is a heavy tail (p99 ~ 10x the median).
struct LatencyDist {
  double median_ms = 0;
  double sigma = 0;
  double mean_ms() const;
  double quantile_ms(double q) const;
};

struct SyntheticSpec {
  std::string preset = "local-nvme";
  std::uint64_t samples = 10000;
  double size_mean_bytes = 110 * 1024.0;  // an ImageNet JPEG
  double size_sigma = 0.3;
  LatencyDist stat;
  LatencyDist open;
  LatencyDist first_byte;
  double mb_per_s = 0;       // per stream; 0 = no transfer time
  bool read_does_stat = true;  // a file read pays the lookup too (FUSE, NFS)
  double bad_fraction = 0;   // samples that fail to read (tests of --skip-bad)
  std::uint64_t seed = 1;
};

// "synthetic:" followed by an optional preset name and key=value pairs:
// samples, size (e.g. 50KiB), size-sigma, stat-ms, open-ms, read-ms, sigma
// (all three latencies' shape), mbps, bad, seed. Usage error on anything else.
SyntheticSpec parse_synthetic_spec(const std::string& text);
bool is_synthetic_spec(const std::string& text);
std::vector<std::string> synthetic_presets();

std::unique_ptr<SampleSource> make_synthetic_source(const SyntheticSpec& spec);

}  // namespace gpufeed::loader
