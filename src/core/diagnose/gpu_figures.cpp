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
    DeviceActivity analysed = analyse_device(g.samples, g.buffered, dev.index);
    if (analysed.activity.samples == 0) continue;
    JobGpu j;
    j.device = dev;
    j.fine_grained = analysed.fine_grained;
    j.activity = std::move(analysed.activity);
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
