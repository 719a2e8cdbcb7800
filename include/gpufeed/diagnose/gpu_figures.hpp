#pragma once
// GPU figures of a diagnosis: the activity of each GPU the job uses.
#include <vector>

#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/gpu/activity.hpp"

namespace gpufeed {

struct JobGpu {
  GpuDevice device;
  GpuActivity activity;
  bool fine_grained = false;  // from the vendor's buffered samples
};

// One entry per GPU the job uses (all GPUs when unknown); empty without GPU evidence.
std::vector<JobGpu> job_gpus(const Evidence& e);
// Mean busy fraction over the job's GPUs.
std::optional<double> job_gpu_busy(const std::vector<JobGpu>& gpus);

}  // namespace gpufeed
