#pragma once
// The CUDA and HIP backends on their own (src/device/stream_backend.cpp), for
// callers and tests that name the runtime library. open_device_backend()
// (device_backend.hpp) is the usual way in.
#include <memory>
#include <string>
#include <vector>

#include "gpufeed/loader/device_backend.hpp"

namespace gpufeed::loader {

// Opens device 0 through the runtime library `library` (a dlopen() name such
// as "libcudart.so.13", or a path), loaded at run time: no vendor SDK is
// needed to build, and nothing is linked. Pinned memory comes from the
// runtime (cudaHostAlloc / hipHostMalloc), slots from cudaMalloc / hipMalloc,
// and copies run on one dedicated non-blocking stream; each copy records its
// own event, and wait() synchronises on that event only.
// Throws gpufeed::Error (runtime) naming the library and the runtime's error
// when the library is missing, is not that runtime, or finds no device.
std::unique_ptr<DeviceBackend> open_cuda_backend(const std::string& library);
std::unique_ptr<DeviceBackend> open_hip_backend(const std::string& library);

// The runtime libraries open_device_backend() tries, in order: the one named
// by $GPUFEED_CUDART_LIBRARY (resp. $GPUFEED_HIP_LIBRARY) alone when set,
// otherwise libcudart.so.13, .12, libcudart.so (libamdhip64.so.6, .5,
// libamdhip64.so).
std::vector<std::string> cuda_runtime_candidates();
std::vector<std::string> hip_runtime_candidates();

}  // namespace gpufeed::loader
