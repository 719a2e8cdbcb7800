#include "gpufeed/diagnose/gpu_figures.hpp"

#include <algorithm>

namespace gpufeed {

std::vector<JobGpu> job_gpus(const Evidence& e) {
  std::vector<JobGpu> out;
  if (!e.gpu) return out;
  const GpuEvidence& g = *e.gpu;
  for (const auto& dev : g.devices) {
    if (!g.job_devices.empty() &&
        std::find(g.job_devices.begin(), g.job_devices.end(), dev.index) == g.job_devices.end()) {
      continue;
    }
    std::vector<GpuSample> polled, fine;
    for (const auto& s : g.samples) {
      if (s.device == dev.index) polled.push_back(s);
    }
    for (const auto& s : g.buffered) {
      if (s.device == dev.index && s.busy_pct) fine.push_back(s);
    }
    if (polled.empty() && fine.empty()) continue;
    JobGpu j;
    j.device = dev;
    // The vendor's own finer samples resolve short gaps our polling blurs;
    // power and energy still come from the polled readings.
    j.fine_grained = fine.size() > polled.size();
    j.activity = analyse_gpu(j.fine_grained ? fine : polled);
    if (j.fine_grained) {
      GpuActivity p = analyse_gpu(polled);
      j.activity.energy_j = p.energy_j;
      j.activity.mean_power_w = p.mean_power_w;
    }
    out.push_back(std::move(j));
  }
  return out;
}

std::optional<double> job_gpu_busy(const std::vector<JobGpu>& gpus) {
  double sum = 0;
  int n = 0;
  for (const auto& g : gpus) {
    if (g.activity.busy_fraction) {
      sum += *g.activity.busy_fraction;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

}  // namespace gpufeed
