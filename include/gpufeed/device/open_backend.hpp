#pragma once
// Adapter (src/device): opens the device backend --device asks for.
#include <memory>
#include <string>

#include "gpufeed/loader/device_backend.hpp"

namespace gpufeed::loader {

// The backend asked for, or for Auto the first that works of CUDA, HIP and
// host (never cpu: a GPU job on a GPU-less machine is still a GPU job). `why` says what was chosen and why the others were not
// ("auto: no CUDA device (cudaGetDeviceCount: 35), no HIP device (100); using host").
// An explicit choice that cannot work throws gpufeed::Error naming the cause.
std::unique_ptr<DeviceBackend> open_device_backend(DeviceChoice choice, std::string& why);

}  // namespace gpufeed::loader
