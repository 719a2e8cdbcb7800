// Which GPU vendor libraries this host can load. gpufeed never links them:
// the samplers and device backends dlopen() them at run time, so one binary
// starts on every host. Probing loads and unloads each candidate once.

#include <array>

#include <fmt/format.h>

#include "gpufeed/os/dynamic_library.hpp"
#include "gpufeed/probe/host_inspector.hpp"

namespace gpufeed {
namespace {

struct Candidate {
  const char* name;
  const char* purpose;
  std::array<const char*, 4> sonames;
};

constexpr std::array kCandidates{
    Candidate{"rocm-smi", "AMD GPU activity (diagnose)",
              {"librocm_smi64.so.1", "librocm_smi64.so.7", "librocm_smi64.so.6", "librocm_smi64.so.5"}},
    Candidate{"NVML", "NVIDIA GPU activity (diagnose)", {"libnvidia-ml.so.1", nullptr, nullptr, nullptr}},
    Candidate{"HIP runtime", "AMD transfer stream (tune, bench)",
              {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so", nullptr}},
    Candidate{"CUDA runtime", "NVIDIA transfer stream (tune, bench)",
              {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"}},
};

}  // namespace

std::vector<GpuLibrary> probe_gpu_libraries() {
  std::vector<GpuLibrary> out;
  for (const auto& c : kCandidates) {
    GpuLibrary lib{c.name, c.purpose, false, ""};
    std::string tried;
    for (const char* soname : c.sonames) {
      if (soname == nullptr) break;
      tried += fmt::format("{}{}", tried.empty() ? "" : ", ", soname);
      const os::DynamicLibrary handle(soname, os::DynamicLibrary::Lifetime::Unload, os::DynamicLibrary::Binding::Lazy);
      if (!handle) continue;
      lib.loadable = true;
      lib.detail = handle.path().empty() ? soname : handle.path();
      break;
    }
    if (!lib.loadable) lib.detail = "not found (tried " + tried + ")";
    out.push_back(std::move(lib));
  }
  return out;
}

}  // namespace gpufeed
