#pragma once
// The CUDA/HIP backend factory, private to src/device.
#include <memory>
#include <string>
#include <vector>

#include "gpu_runtime.hpp"
#include "gpufeed/loader/device_backend.hpp"

namespace gpufeed::loader::device {

// Loads the first of `libraries` that is this runtime and opens device 0 on a
// new non-blocking stream. nullptr when none can be used; `reason` then says
// why in one line ("no device: cudaGetDeviceCount returned 35 (...) in
// libcudart.so.13"). Failures after a successful open throw gpufeed::Error.
std::unique_ptr<DeviceBackend> open_stream_backend(const RuntimeFlavor& flavor,
                                                   const std::vector<std::string>& libraries, std::string& reason);

}  // namespace gpufeed::loader::device
