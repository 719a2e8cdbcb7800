// Which GPU vendor libraries this host can load. gpufeed never links them:
// the samplers and device backends dlopen() them at run time, so one binary
// starts on every host. Probing loads and unloads each candidate once.

#include <fmt/format.h>

#include "gpufeed/gpu/vendors.hpp"
#include "gpufeed/os/dynamic_library.hpp"
#include "gpufeed/probe/host_inspector.hpp"

namespace gpufeed {
namespace {

GpuLibrary probe_library(const VendorLibrary& candidate) {
  GpuLibrary lib{std::string(candidate.name), std::string(candidate.purpose), false, ""};
  std::string tried;
  for (const std::string_view soname_view : candidate.sonames) {
    const std::string soname(soname_view);
    tried += fmt::format("{}{}", tried.empty() ? "" : ", ", soname);
    const os::DynamicLibrary handle(soname, os::DynamicLibrary::Lifetime::Unload, os::DynamicLibrary::Binding::Lazy);
    if (!handle) continue;
    lib.loadable = true;
    lib.detail = handle.path().empty() ? soname : handle.path();
    break;
  }
  if (!lib.loadable) lib.detail = "not found (tried " + tried + ")";
  return lib;
}

}  // namespace

// The monitoring libraries, then the runtimes, each by vendor id.
std::vector<GpuLibrary> probe_gpu_libraries() {
  const auto vendors = gpu_vendors_by_id();
  std::vector<GpuLibrary> out;
  for (const GpuVendor* v : vendors) out.push_back(probe_library(v->monitoring));
  for (const GpuVendor* v : vendors) out.push_back(probe_library(v->runtime));
  return out;
}

}  // namespace gpufeed
