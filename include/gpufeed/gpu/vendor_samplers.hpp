#pragma once
// The vendor GPU samplers: NVML and rocm-smi, each loaded with dlopen() at run
// time so no vendor SDK is needed to build and a host without the library or
// the GPU starts normally. "Unavailable" is a normal answer, never an
// exception: the reason is one line for the report.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "gpufeed/gpu/sampler.hpp"

namespace gpufeed {

struct GpuOpenResult {
  std::unique_ptr<GpuSampler> sampler;  // null when unavailable
  std::string unavailable;              // why, one line; empty when sampler is set
};

// NVML through dlopen(library). Only the versioned entry points we need are
// resolved; a missing optional symbol (or one the driver answers with
// NVML_ERROR_FUNCTION_NOT_FOUND) disables that metric only. Backend "nvml".
GpuOpenResult open_nvml(const std::string& library = "libnvidia-ml.so.1");

// rocm-smi-lib through dlopen(library); an empty name tries
// librocm_smi64.so.1, .so.7, .so.6 and .so.5. rsmi_init's own stderr chatter
// is kept from the user (fd 2 goes to /dev/null during the call, so other
// threads' stderr output in that instant is lost too). Backend "rocm-smi".
GpuOpenResult open_rocm_smi(const std::string& library = "");

// --gpu auto|nvml|rocm-smi|none: auto tries NVML, then rocm-smi, and joins
// both reasons when neither is there. Throws a usage error for another name.
GpuOpenResult open_gpu_sampler(const std::string& backend);

// Bus id helpers, public so tests can check them without a GPU.
// NVML's "00000000:41:00.0" (8-digit domain, upper case) → "0000:41:00.0".
// Returns the input lower-cased when it is not in the domain:bus:dev.fn form.
std::string normalize_nvml_bus_id(std::string_view nvml_bus_id);
// rocm-smi's BDFID (domain << 32 | bus << 8 | device << 3 | function) →
// "dddd:bb:dd.f".
std::string rocm_smi_bus_id(std::uint64_t bdfid);

}  // namespace gpufeed
