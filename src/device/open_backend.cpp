// Choosing the device backend: --device auto|cuda|hip|host|cpu.
#include "gpufeed/device/open_backend.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "gpufeed/error.hpp"
#include "gpufeed/gpu/vendors.hpp"
#include "gpufeed/device/device_gpu.hpp"
#include "gpufeed/device/device_host.hpp"
#include "stream_backend.hpp"

namespace gpufeed::loader {
namespace {

// The override variable alone when set (tests point it at a fake runtime;
// users at a runtime outside the loader's path), else the vendor table's
// runtime sonames, newest first.
std::vector<std::string> candidates(const device::RuntimeFlavor& flavor) {
  const std::string variable(flavor.library_env);
  if (const char* path = std::getenv(variable.c_str()); path != nullptr && *path != '\0') return {path};
  std::vector<std::string> sonames;
  if (const GpuVendor* vendor = vendor_by_runtime(flavor.backend)) {
    sonames.assign(vendor->runtime.sonames.begin(), vendor->runtime.sonames.end());
  }
  return sonames;
}

std::string install_hint(const device::RuntimeFlavor& flavor) {
  if (flavor.backend == "cuda") {
    return "install the NVIDIA driver and CUDA runtime (libcudart), point GPUFEED_CUDART_LIBRARY at "
           "libcudart.so, or use --device host";
  }
  return "install ROCm's HIP runtime (libamdhip64) with a working amdgpu driver, point GPUFEED_HIP_LIBRARY at "
         "libamdhip64.so, or use --device host";
}

std::unique_ptr<DeviceBackend> open_or_throw(const device::RuntimeFlavor& flavor,
                                             const std::vector<std::string>& libraries) {
  std::string reason;
  auto backend = device::open_stream_backend(flavor, libraries, reason);
  if (!backend) {
    throw runtime_error(fmt::format("{} backend unavailable: {}", flavor.title, reason), install_hint(flavor));
  }
  return backend;
}

}  // namespace

std::vector<std::string> cuda_runtime_candidates() {
  return candidates(device::kCudaFlavor);
}

std::vector<std::string> hip_runtime_candidates() {
  return candidates(device::kHipFlavor);
}

std::unique_ptr<DeviceBackend> open_cuda_backend(const std::string& library) {
  return open_or_throw(device::kCudaFlavor, {library});
}

std::unique_ptr<DeviceBackend> open_hip_backend(const std::string& library) {
  return open_or_throw(device::kHipFlavor, {library});
}

std::unique_ptr<DeviceBackend> open_device_backend(DeviceChoice choice, std::string& why) {
  std::unique_ptr<DeviceBackend> backend;
  switch (choice) {
    case DeviceChoice::Host:
      backend = make_host_backend();
      why = "host (asked for)";
      return backend;
    case DeviceChoice::Cpu:
      backend = make_cpu_backend();
      why = "cpu (asked for): no transfer";
      return backend;
    case DeviceChoice::Cuda:
      backend = open_or_throw(device::kCudaFlavor, cuda_runtime_candidates());
      why = fmt::format("cuda (asked for): {}", backend->description());
      return backend;
    case DeviceChoice::Hip:
      backend = open_or_throw(device::kHipFlavor, hip_runtime_candidates());
      why = fmt::format("hip (asked for): {}", backend->description());
      return backend;
    case DeviceChoice::Auto:
      break;
  }
  // Auto: the first GPU runtime with a device, else the host; `why` keeps
  // every runtime's reason so a user expecting a GPU sees what went wrong.
  std::string cuda_reason, hip_reason;
  if ((backend = device::open_stream_backend(device::kCudaFlavor, cuda_runtime_candidates(), cuda_reason))) {
    why = fmt::format("auto: using cuda ({})", backend->description());
    return backend;
  }
  if ((backend = device::open_stream_backend(device::kHipFlavor, hip_runtime_candidates(), hip_reason))) {
    why = fmt::format("auto: CUDA: {}; using hip ({})", cuda_reason, backend->description());
    return backend;
  }
  why = fmt::format("auto: CUDA: {}; HIP: {}; using host", cuda_reason, hip_reason);
  return make_host_backend();
}

}  // namespace gpufeed::loader
