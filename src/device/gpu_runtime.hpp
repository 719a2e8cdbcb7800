#pragma once
// A CUDA or HIP runtime loaded with dlopen(): the entry points the stream
// backend calls, resolved by the vendor's symbol names. Private to
// src/device.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gpu_runtime_api.h"
#include "gpufeed/os/dynamic_library.hpp"

namespace gpufeed::loader::device {

// What differs between the two runtimes: names only (see gpu_runtime_api.h).
struct RuntimeFlavor {
  std::string_view backend;  // "cuda", "hip": DeviceBackend::name()
  std::string_view title;    // "CUDA", "HIP": for messages
  std::string_view library_env;  // the variable that overrides the library
  const char* get_device_count;
  const char* set_device;
  const char* get_error_name;
  const char* get_error_string;
  const char* runtime_get_version;
  const char* driver_get_version;
  const char* host_alloc;
  const char* host_free;
  const char* device_alloc;
  const char* device_free;
  const char* stream_create_with_flags;
  const char* stream_destroy;
  const char* stream_synchronize;
  const char* memcpy_async;
  const char* event_create_with_flags;
  const char* event_record;
  const char* event_synchronize;
  const char* event_query;
  const char* event_elapsed_time;
  const char* event_destroy;
  // Optional, newest first: only for the device's name.
  const char* get_device_properties[2];
};

extern const RuntimeFlavor kCudaFlavor;
extern const RuntimeFlavor kHipFlavor;

struct GpuRuntime {
  const RuntimeFlavor* flavor = nullptr;
  std::string library;          // the name or path it was loaded from
  std::shared_ptr<os::DynamicLibrary> handle;

  gpufeed_gpu_get_device_count_fn get_device_count = nullptr;
  gpufeed_gpu_set_device_fn set_device = nullptr;
  gpufeed_gpu_error_text_fn get_error_name = nullptr;
  gpufeed_gpu_error_text_fn get_error_string = nullptr;
  gpufeed_gpu_version_fn runtime_get_version = nullptr;
  gpufeed_gpu_version_fn driver_get_version = nullptr;
  gpufeed_gpu_host_alloc_fn host_alloc = nullptr;
  gpufeed_gpu_free_fn host_free = nullptr;
  gpufeed_gpu_malloc_fn device_alloc = nullptr;
  gpufeed_gpu_free_fn device_free = nullptr;
  gpufeed_gpu_stream_create_fn stream_create_with_flags = nullptr;
  gpufeed_gpu_stream_fn stream_destroy = nullptr;
  gpufeed_gpu_stream_fn stream_synchronize = nullptr;
  gpufeed_gpu_memcpy_async_fn memcpy_async = nullptr;
  gpufeed_gpu_event_create_fn event_create_with_flags = nullptr;
  gpufeed_gpu_event_record_fn event_record = nullptr;
  gpufeed_gpu_event_fn event_synchronize = nullptr;
  gpufeed_gpu_event_fn event_query = nullptr;
  gpufeed_gpu_event_elapsed_fn event_elapsed_time = nullptr;
  gpufeed_gpu_event_fn event_destroy = nullptr;
  gpufeed_gpu_get_device_properties_fn get_device_properties = nullptr;  // may be null

  // "35 (cudaErrorInsufficientDriver: CUDA driver version is insufficient
  // for CUDA runtime version)".
  std::string describe(gpufeed_gpu_error status) const;
  // "cudaMalloc returned 2 (cudaErrorMemoryAllocation: out of memory)".
  std::string failed(const char* call, gpufeed_gpu_error status) const;
};

// Loads `library` (a dlopen() name or a path) and resolves every required
// entry point. nullopt when it cannot be loaded or is not this runtime;
// `reason` then says which, in one line naming the library.
std::optional<GpuRuntime> load_gpu_runtime(const RuntimeFlavor& flavor, const std::string& library,
                                           std::string& reason);

// "13.0" from CUDA's 13000, "5.2" from HIP's 50223000 (major*1e7+minor*1e5+patch).
std::string format_runtime_version(const RuntimeFlavor& flavor, int version);

}  // namespace gpufeed::loader::device
