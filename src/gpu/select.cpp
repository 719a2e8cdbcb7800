// Picks the GPU sampler for --gpu: auto, none or a vendor's sampler.
#include <array>
#include <cstdlib>

#include <fmt/format.h>

#include "gpufeed/error.hpp"
#include "gpufeed/gpu/vendor_samplers.hpp"
#include "gpufeed/gpu/vendors.hpp"

namespace gpufeed {
namespace {

GpuOpenResult open_nvidia_sampler() {
  // GPUFEED_NVML_LIBRARY points the NVML backend at another library file;
  // the tests use it to drive the real code path with a scripted fake.
  const char* override_path = std::getenv("GPUFEED_NVML_LIBRARY");
  return open_nvml(override_path != nullptr ? override_path : "");
}

GpuOpenResult open_amd_sampler() { return open_rocm_smi(); }

struct SamplerAdapter {
  std::string_view vendor;  // GpuVendor::id
  SamplerOpener open;
};

// One line per vendor in gpu_vendors().
constexpr std::array kSamplerAdapters{
    SamplerAdapter{"nvidia", open_nvidia_sampler},
    SamplerAdapter{"amd", open_amd_sampler},
};

GpuOpenResult open_vendor_sampler(const GpuVendor& vendor) {
  if (SamplerOpener open = sampler_opener(vendor.id)) return open();
  return {nullptr, fmt::format("{} support not built", vendor.monitoring.name)};
}

}  // namespace

SamplerOpener sampler_opener(std::string_view vendor_id) {
  for (const auto& adapter : kSamplerAdapters) {
    if (adapter.vendor == vendor_id) return adapter.open;
  }
  return nullptr;
}

GpuOpenResult open_gpu_sampler(const std::string& backend) {
  if (backend == "none") return {nullptr, "disabled by --gpu none"};
  if (const GpuVendor* vendor = vendor_by_sampler(backend)) return open_vendor_sampler(*vendor);
  if (backend != "auto") {
    throw usage_error(fmt::format("unknown GPU backend '{}'", backend), "use " + sampler_choices_text(true));
  }
  std::string reasons;
  for (const auto& vendor : gpu_vendors()) {
    GpuOpenResult opened = open_vendor_sampler(vendor);
    if (opened.sampler) return opened;
    reasons += (reasons.empty() ? "" : "; ") + opened.unavailable;
  }
  return {nullptr, reasons};
}

}  // namespace gpufeed
