// Picks the GPU sampler for --gpu auto|nvml|rocm-smi|none.
#include <cstdlib>

#include <fmt/format.h>

#include "gpufeed/error.hpp"
#include "gpufeed/gpu/vendor_samplers.hpp"

namespace gpufeed {

GpuOpenResult open_gpu_sampler(const std::string& backend) {
  // GPUFEED_NVML_LIBRARY points the NVML backend at another library file;
  // the tests use it to drive the real code path with a scripted fake.
  const char* nvml_override = std::getenv("GPUFEED_NVML_LIBRARY");
  const std::string nvml_lib = nvml_override ? nvml_override : "libnvidia-ml.so.1";
  if (backend == "none") return {nullptr, "disabled by --gpu none"};
  if (backend == "nvml") return open_nvml(nvml_lib);
  if (backend == "rocm-smi") return open_rocm_smi();
  if (backend != "auto") {
    throw usage_error(fmt::format("unknown GPU backend '{}'", backend), "use auto, nvml, rocm-smi or none");
  }
  GpuOpenResult nvml = open_nvml(nvml_lib);
  if (nvml.sampler) return nvml;
  GpuOpenResult rocm = open_rocm_smi();
  if (rocm.sampler) return rocm;
  return {nullptr, fmt::format("{}; {}", nvml.unavailable, rocm.unavailable)};
}

}  // namespace gpufeed
