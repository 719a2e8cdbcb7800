#include "gpufeed/tune/pytorch_probe.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace gpufeed::tune {
namespace {

std::optional<double> finite_number(const Json& doc, const char* key) {
  if (!doc.contains(key) || !doc[key].is_number()) return std::nullopt;
  const double v = doc[key].get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

std::string text(const Json& doc, const char* key) {
  return doc.contains(key) && doc[key].is_string() ? doc[key].get<std::string>() : std::string("unknown");
}

}  // namespace

PytorchProbeReading read_pytorch_probe(const Json& doc) {
  PytorchProbeReading out;
  if (!doc.is_object() || doc.value("schema", Json()) != Json("gpufeed.pytorch-probe/v1")) {
    out.error = "the answer is not a gpufeed.pytorch-probe/v1 document";
    return out;
  }
  const auto worker = finite_number(doc, "worker_cpu_ms_per_sample");
  const auto loop = finite_number(doc, "loop_cpu_ms_per_batch");
  if (!worker || *worker <= 0) {
    out.error = "it measured no CPU in the worker (worker_cpu_ms_per_sample missing or not above 0)";
    return out;
  }
  if (!loop || *loop < 0) {
    out.error = "it gave no loop CPU per batch (loop_cpu_ms_per_batch missing or negative)";
    return out;
  }
  out.costs = PytorchCosts{*worker, *loop, text(doc, "pipeline"),
                           fmt::format("torch {}, PIL {}", text(doc, "torch"), text(doc, "pil"))};
  return out;
}

double pytorch_ratio(const PytorchCosts& c, double fallback_ms) {
  const double base = c.builtin_cpu_ms > 0 ? c.builtin_cpu_ms : fallback_ms;
  return base > 0 && c.worker_cpu_ms > 0 ? c.worker_cpu_ms / base : 1.0;
}

double trial_cpu_scale(double ratio) { return std::max(1.0, ratio); }

CpuFromTrials pytorch_cpu_from_trials(const CpuFromTrials& trials, double ratio, double trial_scale) {
  CpuFromTrials out = trials;
  if (out.used && trial_scale > 0) out.cpu_ms *= ratio / trial_scale;
  return out;
}

}  // namespace gpufeed::tune
