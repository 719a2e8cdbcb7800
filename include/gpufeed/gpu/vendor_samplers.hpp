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

// NVML through dlopen(library); an empty name tries the NVIDIA entry's
// monitoring sonames (gpufeed/gpu/vendors.hpp) in order. Only the versioned
// entry points we need are resolved; a missing optional symbol (or one the
// driver answers with NVML_ERROR_FUNCTION_NOT_FOUND) disables that metric
// only. Backend "nvml".
GpuOpenResult open_nvml(const std::string& library = "");

// rocm-smi-lib through dlopen(library); an empty name tries the AMD entry's
// monitoring sonames in order. rsmi_init's own stderr chatter is kept from
// the user (fd 2 goes to /dev/null during the call, so other threads' stderr
// output in that instant is lost too). Backend "rocm-smi".
GpuOpenResult open_rocm_smi(const std::string& library = "");

// The adapter that opens a vendor's sampler, by vendor id ("nvidia"); null
// when this build registers none for it.
using SamplerOpener = GpuOpenResult (*)();
SamplerOpener sampler_opener(std::string_view vendor_id);

// --gpu auto, none or a vendor's sampler: auto tries the vendors in the
// table's order and joins every reason when none is there. Throws a usage
// error for another name.
GpuOpenResult open_gpu_sampler(const std::string& backend);

// Bus id helpers, public so tests can check them without a GPU.
// NVML's "00000000:41:00.0" (8-digit domain, upper case) → "0000:41:00.0".
// Returns the input lower-cased when it is not in the domain:bus:dev.fn form.
std::string normalize_nvml_bus_id(std::string_view nvml_bus_id);
// rocm-smi's BDFID (domain << 32 | bus << 8 | device << 3 | function) →
// "dddd:bb:dd.f".
std::string rocm_smi_bus_id(std::uint64_t bdfid);

}  // namespace gpufeed
