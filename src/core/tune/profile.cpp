#include "gpufeed/tune/profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "gpufeed/error.hpp"
#include "gpufeed/loader/synthetic_source.hpp"
#include "gpufeed/setting.hpp"
#include "gpufeed/stats.hpp"

namespace gpufeed::tune {
namespace {

template <typename T>
T field(const Json& j, const char* key, const std::string& source) {
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw usage_error(fmt::format("profile {}: \"{}\" is missing or has the wrong type", source, key),
                      "see profiles/README.md for the fields");
  }
}

void expect_kind(const Json& j, const std::string& kind, const std::string& source) {
  if (!j.is_object() || j.value("kind", "") != kind) {
    throw usage_error(fmt::format("profile {} is not a {} profile", source, kind),
                      fmt::format("give one hardware and one workload profile, e.g. {0} h100-8 {0} imagenet-resnet50",
                                  spell(Setting::profile)));
  }
}

}  // namespace

HardwareProfile hardware_from_json(const Json& j, const std::string& source) {
  expect_kind(j, "hardware", source);
  HardwareProfile h;
  h.name = field<std::string>(j, "name", source);
  h.description = j.value("description", "");
  h.gpu_model = j.value("gpu_model", "");
  h.gpus = field<int>(j, "gpus", source);
  h.cores = field<int>(j, "cores", source);
  h.numa_nodes = j.value("numa_nodes", 1);
  h.memory_gib = field<double>(j, "memory_gib", source);
  h.pin_gb_per_s = j.value("pin_gb_per_s", 0.0);
  h.pageable_h2d_penalty_ms_per_gib = j.value("pageable_h2d_penalty_ms_per_gib", 0.0);
  if (h.gpus < 1 || h.cores < 1) throw usage_error(fmt::format("profile {}: gpus and cores must be at least 1", source));
  return h;
}

WorkloadProfile workload_from_json(const Json& j, const std::string& source) {
  expect_kind(j, "workload", source);
  WorkloadProfile w;
  w.name = field<std::string>(j, "name", source);
  w.description = j.value("description", "");
  w.sample_bytes = field<double>(j, "sample_bytes", source);
  w.decoded_sample_bytes = j.value("decoded_sample_bytes", w.sample_bytes);
  const Json cpu = j.value("cpu_ms", Json::object());
  w.cpu_median_ms = cpu.value("median", 0.0);
  w.cpu_sigma = cpu.value("sigma", 0.0);
  w.batch_size = field<int>(j, "batch_size", source);
  const Json step = j.value("step_ms", Json::object());
  w.step_mean_ms = step.value("mean", 0.0);
  w.step_spread_ms = step.value("spread", 0.0);
  w.storage_preset = j.value("storage", Json::object()).value("preset", "memory");
  if (w.batch_size < 1) throw usage_error(fmt::format("profile {}: batch_size must be at least 1", source));
  return w;
}

NodeShape node_from(const HardwareProfile& hw) {
  const double reserved = std::ceil(hw.cores * 0.10) + 2.0 * hw.gpus;
  return {hw.gpus, std::max(1.0, hw.cores - reserved)};
}

Distribution step_distribution(double mean_ms, double spread_ms) {
  if (spread_ms <= 0) return Distribution::constant(mean_ms);
  std::vector<double> v;
  for (int i = 0; i < 256; ++i) {
    v.push_back(std::max(0.0, mean_ms + spread_ms * inverse_normal_cdf((i + 0.5) / 256)));
  }
  return Distribution(std::move(v));
}

Workload workload_from(const WorkloadProfile& p, const HardwareProfile& hw) {
  Workload w;
  // Per-sample read latency of the preset, as the synthetic store draws it.
  const auto spec = loader::parse_synthetic_spec("synthetic:" + p.storage_preset);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> n(0, 1);
  auto draw = [&](const loader::LatencyDist& d) { return d.median_ms > 0 ? d.median_ms * std::exp(d.sigma * n(rng)) : 0.0; };
  std::vector<double> reads;
  for (int i = 0; i < 2000; ++i) {
    double ms = (spec.read_does_stat ? draw(spec.stat) : 0) + draw(spec.open) + draw(spec.first_byte);
    if (spec.mb_per_s > 0) ms += p.sample_bytes / (spec.mb_per_s * 1e3);
    reads.push_back(ms);
  }
  w.storage.levels.push_back({1, Distribution(std::move(reads))});
  w.cpu_ms = p.cpu_median_ms > 0 ? Distribution::lognormal(p.cpu_median_ms, p.cpu_sigma) : Distribution();
  w.step_ms = step_distribution(p.step_mean_ms, p.step_spread_ms);
  w.batch_size = p.batch_size;
  w.batch_bytes = p.decoded_sample_bytes * p.batch_size;
  w.pin_gb_per_s = hw.pin_gb_per_s;
  w.pageable_h2d_penalty_ms = hw.pageable_h2d_penalty_ms_per_gib * w.batch_bytes / (1024.0 * 1024 * 1024);
  return w;
}

}  // namespace gpufeed::tune
