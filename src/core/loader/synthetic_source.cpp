// The synthetic store (synthetic_source.hpp).
#include "gpufeed/loader/synthetic_source.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "gpufeed/stats.hpp"
#include "gpufeed/units.hpp"

namespace gpufeed::loader {
namespace {

// Magnitudes, with their sources, in docs/loader.md ("Synthetic presets").
SyntheticSpec preset(const std::string& name) {
  SyntheticSpec s;
  s.preset = name;
  if (name == "memory") {
    s.read_does_stat = false;
  } else if (name == "local-nvme") {
    s.stat = {0.005, 0.3};
    s.open = {0.01, 0.3};
    s.first_byte = {0.08, 0.4};
    s.mb_per_s = 2000;
    s.read_does_stat = false;
  } else if (name == "nfs") {
    s.stat = {0.4, 0.6};
    s.open = {0.8, 0.6};
    s.first_byte = {1.0, 0.6};
    s.mb_per_s = 400;
  } else if (name == "s3fs") {
    // The incident: stat() averaging 47 ms, open() 5-300 ms.
    s.stat = {34, 0.8};
    s.open = {30, 1.0};
    s.first_byte = {10, 0.5};
    s.mb_per_s = 60;
    s.size_mean_bytes = 50 * 1024.0;
  } else if (name == "s3") {
    // Direct GETs: no lookup on the read path; time to first byte dominates.
    s.stat = {15, 0.5};
    s.open = {25, 0.6};
    s.first_byte = {0, 0};
    s.mb_per_s = 90;
    s.read_does_stat = false;
  } else {
    throw usage_error(fmt::format("unknown synthetic preset \"{}\"", name),
                      "use one of: memory, local-nvme, nfs, s3fs, s3");
  }
  return s;
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64: a per-sample hash
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double unit_double(std::uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

double parse_number(const std::string& text, const std::string& key) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || v < 0) {
    throw usage_error(fmt::format("synthetic: {}={} is not a non-negative number", key, text));
  }
  return v;
}

class SyntheticSource final : public SampleSource {
 public:
  explicit SyntheticSource(SyntheticSpec spec) : spec_(std::move(spec)) {}

  std::string kind() const override { return "synthetic"; }
  std::string storage_type() const override { return fmt::format("synthetic ({} preset)", spec_.preset); }
  std::string describe() const override {
    return fmt::format("synthetic {}: {} samples of ~{}; stat {:g} ms, open {:g} ms, first byte {:g} ms (medians){}",
                       spec_.preset, spec_.samples, format_bytes(static_cast<std::uint64_t>(spec_.size_mean_bytes)),
                       spec_.stat.median_ms, spec_.open.median_ms, spec_.first_byte.median_ms,
                       spec_.mb_per_s > 0 ? fmt::format(", {:g} MB/s per stream", spec_.mb_per_s) : "");
  }

  std::vector<SampleInfo> list() override {
    std::vector<SampleInfo> out;
    out.reserve(spec_.samples);
    // Log-normal sizes with the requested mean: median = mean / exp(sigma^2/2).
    const double median = spec_.size_mean_bytes / std::exp(spec_.size_sigma * spec_.size_sigma / 2);
    for (std::uint64_t i = 0; i < spec_.samples; ++i) {
      const double z = normal_from(mix(spec_.seed * 1000003 + i));
      const auto size = static_cast<std::uint64_t>(std::max(1.0, median * std::exp(spec_.size_sigma * z)));
      out.push_back({fmt::format("synthetic/{:09d}", i), size, "1"});
    }
    return out;
  }

  void stat(const SampleInfo&) override { wait(spec_.stat); }
  void open(const SampleInfo&) override { wait(spec_.open); }

  void read(const SampleInfo& s, std::vector<std::byte>& out) override {
    const std::uint64_t index = index_of(s);
    double ms = 0;
    if (spec_.read_does_stat) ms += draw(spec_.stat);
    ms += draw(spec_.open) + draw(spec_.first_byte);
    if (spec_.mb_per_s > 0) ms += static_cast<double>(s.size) / (spec_.mb_per_s * 1e3);
    sleep_ms(ms);
    if (spec_.bad_fraction > 0 && unit_double(mix(spec_.seed ^ (index * 7919))) < spec_.bad_fraction) {
      throw SampleError(s.key, fmt::format("synthetic sample {} is marked bad (bad={:g})", s.key, spec_.bad_fraction));
    }
    out.resize(s.size);
    // Cheap, sample-specific content: a repeated 8-byte pattern.
    const std::uint64_t pattern = mix(index);
    for (std::size_t i = 0; i < out.size(); i += sizeof pattern) {
      std::memcpy(out.data() + i, &pattern, std::min(sizeof pattern, out.size() - i));
    }
  }

 private:
  static double normal_from(std::uint64_t h) {  // Box-Muller from one hash
    const double u1 = std::max(unit_double(h), 1e-12);
    const double u2 = unit_double(mix(h));
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  }

  static std::uint64_t index_of(const SampleInfo& s) {
    const auto slash = s.key.rfind('/');
    std::uint64_t i = 0;
    std::from_chars(s.key.data() + slash + 1, s.key.data() + s.key.size(), i);
    return i;
  }

  double draw(const LatencyDist& d) {
    if (d.median_ms <= 0) return 0;
    if (d.sigma <= 0) return d.median_ms;
    thread_local std::mt19937_64 rng(mix(spec_.seed + next_thread_.fetch_add(1)));
    std::normal_distribution<double> n(0, 1);
    return d.median_ms * std::exp(d.sigma * n(rng));
  }

  void wait(const LatencyDist& d) { sleep_ms(draw(d)); }

  static void sleep_ms(double ms) {
    if (ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
  }

  SyntheticSpec spec_;
  std::atomic<std::uint64_t> next_thread_{0};
};

}  // namespace

double LatencyDist::mean_ms() const { return median_ms * std::exp(sigma * sigma / 2); }

double LatencyDist::quantile_ms(double q) const { return median_ms * std::exp(sigma * inverse_normal_cdf(q)); }

bool is_synthetic_spec(const std::string& text) { return text.rfind("synthetic:", 0) == 0 || text == "synthetic"; }

std::vector<std::string> synthetic_presets() { return {"memory", "local-nvme", "nfs", "s3fs", "s3"}; }

SyntheticSpec parse_synthetic_spec(const std::string& text) {
  if (!is_synthetic_spec(text)) throw usage_error(fmt::format("\"{}\" is not a synthetic: source", text));
  std::string rest = text.size() > 10 ? text.substr(10) : "";
  std::vector<std::string> parts;
  for (std::size_t start = 0; start <= rest.size();) {
    const auto comma = rest.find(',', start);
    const auto stop = comma == std::string::npos ? rest.size() : comma;
    if (stop > start) parts.push_back(rest.substr(start, stop - start));
    start = stop + 1;
  }
  SyntheticSpec spec = preset("local-nvme");
  std::size_t first = 0;
  if (!parts.empty() && parts[0].find('=') == std::string::npos) {
    spec = preset(parts[0]);
    first = 1;
  }
  for (std::size_t i = first; i < parts.size(); ++i) {
    const auto eq = parts[i].find('=');
    if (eq == std::string::npos) {
      throw usage_error(fmt::format("synthetic: \"{}\" is not key=value", parts[i]),
                        "e.g. synthetic:s3fs,samples=5000,size=50KiB");
    }
    const std::string key = parts[i].substr(0, eq);
    const std::string value = parts[i].substr(eq + 1);
    if (key == "samples") spec.samples = static_cast<std::uint64_t>(parse_number(value, key));
    else if (key == "size") spec.size_mean_bytes = static_cast<double>(parse_size(value, "synthetic: size"));
    else if (key == "size-sigma") spec.size_sigma = parse_number(value, key);
    else if (key == "stat-ms") spec.stat.median_ms = parse_number(value, key);
    else if (key == "open-ms") spec.open.median_ms = parse_number(value, key);
    else if (key == "read-ms") spec.first_byte.median_ms = parse_number(value, key);
    else if (key == "sigma") spec.stat.sigma = spec.open.sigma = spec.first_byte.sigma = parse_number(value, key);
    else if (key == "mbps") spec.mb_per_s = parse_number(value, key);
    else if (key == "bad") spec.bad_fraction = std::min(1.0, parse_number(value, key));
    else if (key == "seed") spec.seed = static_cast<std::uint64_t>(parse_number(value, key));
    else {
      throw usage_error(fmt::format("synthetic: unknown key \"{}\"", key),
                        "keys: samples, size, size-sigma, stat-ms, open-ms, read-ms, sigma, mbps, bad, seed");
    }
  }
  if (spec.samples == 0) throw usage_error("synthetic: samples=0 leaves nothing to load", "give samples=N with N > 0");
  return spec;
}

std::unique_ptr<SampleSource> make_synthetic_source(const SyntheticSpec& spec) {
  return std::make_unique<SyntheticSource>(spec);
}

}  // namespace gpufeed::loader
