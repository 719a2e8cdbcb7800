// Loading a CUDA or HIP runtime with dlopen() and resolving its entry points.
#include "gpu_runtime.hpp"

#include <fmt/format.h>

#include "gpufeed/os/dynamic_library.hpp"

namespace gpufeed::loader::device {

const RuntimeFlavor kCudaFlavor{
    .backend = "cuda",
    .title = "CUDA",
    .library_env = "GPUFEED_CUDART_LIBRARY",
    .get_device_count = "cudaGetDeviceCount",
    .set_device = "cudaSetDevice",
    .get_error_name = "cudaGetErrorName",
    .get_error_string = "cudaGetErrorString",
    .runtime_get_version = "cudaRuntimeGetVersion",
    .driver_get_version = "cudaDriverGetVersion",
    .host_alloc = "cudaHostAlloc",
    .host_free = "cudaFreeHost",
    .device_alloc = "cudaMalloc",
    .device_free = "cudaFree",
    .stream_create_with_flags = "cudaStreamCreateWithFlags",
    .stream_destroy = "cudaStreamDestroy",
    .stream_synchronize = "cudaStreamSynchronize",
    .memcpy_async = "cudaMemcpyAsync",
    .event_create_with_flags = "cudaEventCreateWithFlags",
    .event_record = "cudaEventRecord",
    .event_synchronize = "cudaEventSynchronize",
    .event_query = "cudaEventQuery",
    .event_elapsed_time = "cudaEventElapsedTime",
    .event_destroy = "cudaEventDestroy",
    // CUDA 12 added the _v2 struct; 11 and 13 export the plain name.
    .get_device_properties = {"cudaGetDeviceProperties_v2", "cudaGetDeviceProperties"},
};

const RuntimeFlavor kHipFlavor{
    .backend = "hip",
    .title = "HIP",
    .library_env = "GPUFEED_HIP_LIBRARY",
    .get_device_count = "hipGetDeviceCount",
    .set_device = "hipSetDevice",
    .get_error_name = "hipGetErrorName",
    .get_error_string = "hipGetErrorString",
    .runtime_get_version = "hipRuntimeGetVersion",
    .driver_get_version = "hipDriverGetVersion",
    .host_alloc = "hipHostMalloc",
    .host_free = "hipHostFree",
    .device_alloc = "hipMalloc",
    .device_free = "hipFree",
    .stream_create_with_flags = "hipStreamCreateWithFlags",
    .stream_destroy = "hipStreamDestroy",
    .stream_synchronize = "hipStreamSynchronize",
    .memcpy_async = "hipMemcpyAsync",
    .event_create_with_flags = "hipEventCreateWithFlags",
    .event_record = "hipEventRecord",
    .event_synchronize = "hipEventSynchronize",
    .event_query = "hipEventQuery",
    .event_elapsed_time = "hipEventElapsedTime",
    .event_destroy = "hipEventDestroy",
    // HIP 6 versions the struct (R0600); HIP 5 has the plain name.
    .get_device_properties = {"hipGetDevicePropertiesR0600", "hipGetDeviceProperties"},
};

std::string GpuRuntime::describe(gpufeed_gpu_error status) const {
  const char* name = get_error_name != nullptr ? get_error_name(status) : nullptr;
  const char* text = get_error_string != nullptr ? get_error_string(status) : nullptr;
  if (name == nullptr || *name == '\0') return fmt::format("{}", status);
  if (text == nullptr || *text == '\0') return fmt::format("{} ({})", status, name);
  return fmt::format("{} ({}: {})", status, name, text);
}

std::string GpuRuntime::failed(const char* call, gpufeed_gpu_error status) const {
  return fmt::format("{} returned {}", call, describe(status));
}

namespace {

template <class F>
bool resolve(const os::DynamicLibrary& library, const char* symbol, F& out) {
  out = library.symbol<F>(symbol);
  return out != nullptr;
}

}  // namespace

std::optional<GpuRuntime> load_gpu_runtime(const RuntimeFlavor& flavor, const std::string& library,
                                           std::string& reason) {
  // A GPU runtime starts its own threads and registers exit handlers: once
  // loaded it stays mapped.
  auto loaded = std::make_shared<os::DynamicLibrary>(library, os::DynamicLibrary::Lifetime::StayMapped);
  if (!*loaded) {
    reason = loaded->error();
    return std::nullopt;
  }
  const os::DynamicLibrary& raw = *loaded;
  GpuRuntime rt;
  rt.flavor = &flavor;
  rt.library = library;
  rt.handle = loaded;

  const std::pair<const char*, bool> resolved[] = {
      {flavor.get_device_count, resolve(raw, flavor.get_device_count, rt.get_device_count)},
      {flavor.set_device, resolve(raw, flavor.set_device, rt.set_device)},
      {flavor.get_error_name, resolve(raw, flavor.get_error_name, rt.get_error_name)},
      {flavor.get_error_string, resolve(raw, flavor.get_error_string, rt.get_error_string)},
      {flavor.runtime_get_version, resolve(raw, flavor.runtime_get_version, rt.runtime_get_version)},
      {flavor.driver_get_version, resolve(raw, flavor.driver_get_version, rt.driver_get_version)},
      {flavor.host_alloc, resolve(raw, flavor.host_alloc, rt.host_alloc)},
      {flavor.host_free, resolve(raw, flavor.host_free, rt.host_free)},
      {flavor.device_alloc, resolve(raw, flavor.device_alloc, rt.device_alloc)},
      {flavor.device_free, resolve(raw, flavor.device_free, rt.device_free)},
      {flavor.stream_create_with_flags, resolve(raw, flavor.stream_create_with_flags, rt.stream_create_with_flags)},
      {flavor.stream_destroy, resolve(raw, flavor.stream_destroy, rt.stream_destroy)},
      {flavor.stream_synchronize, resolve(raw, flavor.stream_synchronize, rt.stream_synchronize)},
      {flavor.memcpy_async, resolve(raw, flavor.memcpy_async, rt.memcpy_async)},
      {flavor.event_create_with_flags, resolve(raw, flavor.event_create_with_flags, rt.event_create_with_flags)},
      {flavor.event_record, resolve(raw, flavor.event_record, rt.event_record)},
      {flavor.event_synchronize, resolve(raw, flavor.event_synchronize, rt.event_synchronize)},
      {flavor.event_query, resolve(raw, flavor.event_query, rt.event_query)},
      {flavor.event_elapsed_time, resolve(raw, flavor.event_elapsed_time, rt.event_elapsed_time)},
      {flavor.event_destroy, resolve(raw, flavor.event_destroy, rt.event_destroy)},
  };
  for (const auto& [symbol, found] : resolved) {
    if (!found) {
      reason = fmt::format("{} has no {}: not a {} runtime", library, symbol, flavor.title);
      return std::nullopt;
    }
  }
  for (const char* symbol : flavor.get_device_properties) {
    if (resolve(raw, symbol, rt.get_device_properties)) break;
  }
  return rt;
}

std::string format_runtime_version(const RuntimeFlavor& flavor, int version) {
  if (version <= 0) return "unknown";
  if (flavor.backend == "hip") return fmt::format("{}.{}", version / 10000000, version / 100000 % 100);
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

}  // namespace gpufeed::loader::device
