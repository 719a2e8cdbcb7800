// NVIDIA GPU activity through NVML, loaded with dlopen() at run time (like
// nvtop's extract_gpuinfo_nvidia.c): only the entry points we use are
// resolved, by their versioned names. Four are required (init, shutdown,
// device count, device handle); every other one is optional and its absence,
// or a failing call, empties only the fields it would have filled.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "gpufeed/os/dynamic_library.hpp"
#include "gpufeed/gpu/vendor_samplers.hpp"
#include "gpufeed/gpu/vendors.hpp"
#include "nvml_api.hpp"

namespace gpufeed {

std::string normalize_nvml_bus_id(std::string_view nvml_bus_id) {
  std::string id(nvml_bus_id.substr(0, nvml_bus_id.find('\0')));
  for (auto& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  int consumed = 0;
  if (std::sscanf(id.c_str(), "%x:%x:%x.%x%n", &domain, &bus, &device, &function, &consumed) == 4 &&
      static_cast<size_t>(consumed) == id.size() && bus <= 0xff && device <= 0x1f && function <= 7) {
    return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, device, function);
  }
  return id;
}

namespace {

const GpuVendor& nvidia() { return *vendor_by_id("nvidia"); }

struct NvmlApi {
  os::DynamicLibrary library;
  // Required.
  nvmlInit_fn init = nullptr;
  nvmlShutdown_fn shutdown = nullptr;
  nvmlDeviceGetCount_fn get_count = nullptr;
  nvmlDeviceGetHandleByIndex_fn get_handle = nullptr;
  // Optional: nullptr disables that reading.
  nvmlErrorString_fn error_string = nullptr;
  nvmlDeviceGetName_fn get_name = nullptr;
  nvmlDeviceGetPciInfo_fn get_pci_v3 = nullptr;
  nvmlDeviceGetPciInfo_fn get_pci_v2 = nullptr;
  nvmlDeviceGetMemoryInfo_fn get_memory = nullptr;
  nvmlDeviceGetUtilizationRates_fn get_utilization = nullptr;
  nvmlDeviceGetPowerUsage_fn get_power = nullptr;
  nvmlDeviceGetTemperature_fn get_temperature = nullptr;
  nvmlDeviceGetSamples_fn get_samples = nullptr;
  // Newest first; the _v2/_v3 ones fill nvmlProcessInfo_v2_t, the unversioned
  // one nvmlProcessInfo_v1_t.
  nvmlDeviceGetComputeRunningProcesses_fn get_processes_v3 = nullptr;
  nvmlDeviceGetComputeRunningProcesses_fn get_processes_v2 = nullptr;
  nvmlDeviceGetComputeRunningProcesses_fn get_processes_v1 = nullptr;

  std::string describe(nvmlReturn_t status) const {
    const char* text = error_string != nullptr ? error_string(status) : nullptr;
    if (text == nullptr || *text == '\0') return fmt::format("NVML error {}", status);
    return fmt::format("{} (NVML error {})", text, status);
  }
};

// True when the driver ships the symbol but not the function behind it: try
// the older entry point.
bool missing_function(nvmlReturn_t status) { return status == GPUFEED_NVML_ERROR_FUNCTION_NOT_FOUND; }

struct NvmlDevice {
  GpuDevice info;
  nvmlDevice_t handle = nullptr;
  unsigned long long last_sample_us = 0;  // nvmlDeviceGetSamples' lastSeenTimeStamp
  bool samples_unsupported = false;
};

class NvmlSampler final : public GpuSampler {
 public:
  NvmlSampler(NvmlApi api, std::vector<NvmlDevice> devices)
      : api_(std::move(api)), devices_(std::move(devices)) {}
  ~NvmlSampler() override {
    api_.shutdown();
    api_.library.reset();
  }
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  std::string backend() const override { return std::string(nvidia().sampler); }

  std::vector<GpuDevice> devices() const override {
    std::vector<GpuDevice> out;
    out.reserve(devices_.size());
    for (const auto& d : devices_) out.push_back(d.info);
    return out;
  }

  std::vector<GpuSample> sample(double t_s) override {
    std::vector<GpuSample> out;
    out.reserve(devices_.size());
    for (const auto& d : devices_) {
      GpuSample s;
      s.t_s = t_s;
      s.device = d.info.index;
      if (api_.get_utilization != nullptr) {
        nvmlUtilization_t u{};
        if (api_.get_utilization(d.handle, &u) == GPUFEED_NVML_SUCCESS) s.busy_pct = u.gpu;
      }
      if (api_.get_memory != nullptr) {
        nvmlMemory_t m{};
        if (api_.get_memory(d.handle, &m) == GPUFEED_NVML_SUCCESS) s.memory_used_bytes = m.used;
      }
      if (api_.get_power != nullptr) {
        unsigned int milliwatts = 0;
        if (api_.get_power(d.handle, &milliwatts) == GPUFEED_NVML_SUCCESS) s.power_w = milliwatts / 1000.0;
      }
      if (api_.get_temperature != nullptr) {
        unsigned int celsius = 0;
        if (api_.get_temperature(d.handle, GPUFEED_NVML_TEMPERATURE_GPU, &celsius) == GPUFEED_NVML_SUCCESS) {
          s.temperature_c = celsius;
        }
      }
      out.push_back(s);
    }
    return out;
  }

  std::vector<GpuSample> buffered_busy(int device, double t_s) override {
    NvmlDevice* d = find(device);
    if (d == nullptr || api_.get_samples == nullptr || d->samples_unsupported) return {};
    nvmlValueType_t type = GPUFEED_NVML_VALUE_TYPE_UNSIGNED_INT;
    unsigned int count = 0;
    // First ask how many entries the buffer may hold, then read them.
    nvmlReturn_t status = api_.get_samples(d->handle, GPUFEED_NVML_GPU_UTILIZATION_SAMPLES, d->last_sample_us,
                                           &type, &count, nullptr);
    if (status == GPUFEED_NVML_ERROR_NOT_SUPPORTED || missing_function(status)) d->samples_unsupported = true;
    if (status != GPUFEED_NVML_SUCCESS || count == 0) return {};
    std::vector<nvmlSample_t> raw(count);
    status = api_.get_samples(d->handle, GPUFEED_NVML_GPU_UTILIZATION_SAMPLES, d->last_sample_us, &type,
                              &count, raw.data());
    if (status != GPUFEED_NVML_SUCCESS) return {};
    raw.resize(std::min<size_t>(count, raw.size()));

    // Anchor the driver's clock to ours once, for all devices (they share
    // it): the newest sample of the first non-empty read is "now", t_s.
    // Older entries of that first read land before it, possibly below zero
    // (buffered before sampling started).
    unsigned long long newest = 0;
    for (const auto& r : raw) {
      if (r.timeStamp > d->last_sample_us && r.timeStamp > newest) newest = r.timeStamp;
    }
    if (newest == 0) return {};
    if (!anchor_) anchor_ = std::pair{newest, t_s};

    std::vector<GpuSample> out;
    for (const auto& r : raw) {
      // Unfilled slots carry a zero timestamp; entries up to lastSeen were
      // already returned.
      if (r.timeStamp == 0 || r.timeStamp <= d->last_sample_us) continue;
      auto busy = value(type, r.sampleValue);
      if (!busy) continue;
      GpuSample s;
      s.device = device;
      s.t_s = anchor_->second + (static_cast<double>(r.timeStamp) - static_cast<double>(anchor_->first)) / 1e6;
      s.busy_pct = *busy;
      out.push_back(s);
    }
    d->last_sample_us = newest;
    std::sort(out.begin(), out.end(), [](const GpuSample& a, const GpuSample& b) { return a.t_s < b.t_s; });
    return out;
  }

  std::vector<GpuProcess> processes(int device) override {
    NvmlDevice* d = find(device);
    if (d == nullptr) return {};
    // Newest entry point first; an older driver answers FUNCTION_NOT_FOUND.
    const std::pair<nvmlDeviceGetComputeRunningProcesses_fn, bool> entry_points[] = {
        {api_.get_processes_v3, true}, {api_.get_processes_v2, true}, {api_.get_processes_v1, false}};
    for (const auto& [fn, v2_layout] : entry_points) {
      if (fn == nullptr) continue;
      auto found = v2_layout ? read_processes<nvmlProcessInfo_v2_t>(fn, d->handle)
                             : read_processes<nvmlProcessInfo_v1_t>(fn, d->handle);
      if (found) return *found;
    }
    return {};
  }

 private:
  NvmlDevice* find(int device) {
    for (auto& d : devices_) {
      if (d.info.index == device) return &d;
    }
    return nullptr;
  }

  static std::optional<double> value(nvmlValueType_t type, const nvmlValue_t& v) {
    switch (type) {
      case GPUFEED_NVML_VALUE_TYPE_DOUBLE: return v.dVal;
      case GPUFEED_NVML_VALUE_TYPE_UNSIGNED_INT: return v.uiVal;
      case GPUFEED_NVML_VALUE_TYPE_UNSIGNED_LONG: return static_cast<double>(v.ulVal);
      case GPUFEED_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return static_cast<double>(v.ullVal);
      case GPUFEED_NVML_VALUE_TYPE_SIGNED_LONG_LONG: return static_cast<double>(v.sllVal);
      case GPUFEED_NVML_VALUE_TYPE_SIGNED_INT: return v.siVal;
      case GPUFEED_NVML_VALUE_TYPE_UNSIGNED_SHORT: return v.usVal;
      default: return std::nullopt;
    }
  }

  // nullopt: this entry point does not work here, try the next one.
  template <class Info>
  static std::optional<std::vector<GpuProcess>> read_processes(nvmlDeviceGetComputeRunningProcesses_fn fn,
                                                               nvmlDevice_t handle) {
    std::vector<Info> infos(16);
    // The list can grow between the calls; give up after a few rounds.
    for (int round = 0; round < 4; ++round) {
      auto count = static_cast<unsigned int>(infos.size());
      nvmlReturn_t status = fn(handle, &count, infos.data());
      if (status == GPUFEED_NVML_ERROR_INSUFFICIENT_SIZE) {
        infos.resize(std::max<size_t>(count + 8, infos.size() * 2));
        continue;
      }
      if (missing_function(status)) return std::nullopt;
      if (status != GPUFEED_NVML_SUCCESS) return std::vector<GpuProcess>{};
      std::vector<GpuProcess> out;
      for (unsigned int i = 0; i < count && i < infos.size(); ++i) {
        GpuProcess p;
        p.pid = static_cast<int>(infos[i].pid);
        if (infos[i].usedGpuMemory != GPUFEED_NVML_VALUE_NOT_AVAILABLE) p.memory_bytes = infos[i].usedGpuMemory;
        out.push_back(p);
      }
      return out;
    }
    return std::vector<GpuProcess>{};
  }

  NvmlApi api_;
  std::vector<NvmlDevice> devices_;
  // (driver timestamp in µs, our t_s) of the first buffered sample read.
  std::optional<std::pair<unsigned long long, double>> anchor_;
};

std::optional<std::string> read_bus_id(const NvmlApi& api, nvmlDevice_t handle) {
  for (auto fn : {api.get_pci_v3, api.get_pci_v2}) {
    if (fn == nullptr) continue;
    nvmlPciInfo_t pci{};
    nvmlReturn_t status = fn(handle, &pci);
    if (missing_function(status)) continue;
    if (status != GPUFEED_NVML_SUCCESS) return std::nullopt;
    std::string_view id(pci.busId, sizeof pci.busId);
    id = id.substr(0, id.find('\0'));
    if (id.empty()) {
      // No text: build it from the numbers (the function number is not among them).
      return fmt::format("{:04x}:{:02x}:{:02x}.0", pci.domain, pci.bus, pci.device);
    }
    return normalize_nvml_bus_id(id);
  }
  return std::nullopt;
}

}  // namespace

GpuOpenResult open_nvml(const std::string& path) {
  NvmlApi api;
  std::string library = path;
  if (path.empty()) {
    std::string first_error;
    for (const std::string_view soname : nvidia().monitoring.sonames) {
      library = soname;
      api.library = os::DynamicLibrary(library);
      if (api.library) break;
      if (first_error.empty()) first_error = api.library.error();
    }
    if (!api.library) return {nullptr, fmt::format("NVML not found ({})", first_error)};
  } else {
    api.library = os::DynamicLibrary(library);
    if (!api.library) return {nullptr, fmt::format("NVML not found ({})", api.library.error())};
  }

  const auto& lib = api.library;
  api.init = lib.symbol<nvmlInit_fn>("nvmlInit_v2");
  api.shutdown = lib.symbol<nvmlShutdown_fn>("nvmlShutdown");
  api.get_count = lib.symbol<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount_v2");
  api.get_handle = lib.symbol<nvmlDeviceGetHandleByIndex_fn>("nvmlDeviceGetHandleByIndex_v2");
  for (auto [present, name] : {std::pair{api.init != nullptr, "nvmlInit_v2"},
                               std::pair{api.shutdown != nullptr, "nvmlShutdown"},
                               std::pair{api.get_count != nullptr, "nvmlDeviceGetCount_v2"},
                               std::pair{api.get_handle != nullptr, "nvmlDeviceGetHandleByIndex_v2"}}) {
    if (!present) return {nullptr, fmt::format("NVML too old or not NVML ({} lacks {})", library, name)};
  }
  api.error_string = lib.symbol<nvmlErrorString_fn>("nvmlErrorString");
  api.get_name = lib.symbol<nvmlDeviceGetName_fn>("nvmlDeviceGetName");
  api.get_pci_v3 = lib.symbol<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo_v3");
  api.get_pci_v2 = lib.symbol<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo_v2");
  api.get_memory = lib.symbol<nvmlDeviceGetMemoryInfo_fn>("nvmlDeviceGetMemoryInfo");
  api.get_utilization = lib.symbol<nvmlDeviceGetUtilizationRates_fn>("nvmlDeviceGetUtilizationRates");
  api.get_power = lib.symbol<nvmlDeviceGetPowerUsage_fn>("nvmlDeviceGetPowerUsage");
  api.get_temperature = lib.symbol<nvmlDeviceGetTemperature_fn>("nvmlDeviceGetTemperature");
  api.get_samples = lib.symbol<nvmlDeviceGetSamples_fn>("nvmlDeviceGetSamples");
  api.get_processes_v3 =
      lib.symbol<nvmlDeviceGetComputeRunningProcesses_fn>("nvmlDeviceGetComputeRunningProcesses_v3");
  api.get_processes_v2 =
      lib.symbol<nvmlDeviceGetComputeRunningProcesses_fn>("nvmlDeviceGetComputeRunningProcesses_v2");
  api.get_processes_v1 = lib.symbol<nvmlDeviceGetComputeRunningProcesses_fn>("nvmlDeviceGetComputeRunningProcesses");

  if (nvmlReturn_t status = api.init(); status != GPUFEED_NVML_SUCCESS) {
    return {nullptr, fmt::format("NVML cannot start (nvmlInit_v2: {})", api.describe(status))};
  }
  // From here on, every way out without a sampler shuts NVML down again.
  auto fail = [&api](std::string why) {
    api.shutdown();
    return GpuOpenResult{nullptr, std::move(why)};
  };

  unsigned int count = 0;
  if (nvmlReturn_t status = api.get_count(&count); status != GPUFEED_NVML_SUCCESS) {
    return fail(fmt::format("NVML cannot count GPUs (nvmlDeviceGetCount_v2: {})", api.describe(status)));
  }
  if (count == 0) return fail("no NVIDIA GPU found (NVML reports 0 devices)");

  std::vector<NvmlDevice> devices;
  std::string first_failure;
  for (unsigned int i = 0; i < count; ++i) {
    NvmlDevice d;
    if (nvmlReturn_t status = api.get_handle(i, &d.handle); status != GPUFEED_NVML_SUCCESS) {
      // A GPU we may not see (cgroup, lost) is left out; the others stay usable.
      if (first_failure.empty()) {
        first_failure = fmt::format("nvmlDeviceGetHandleByIndex_v2({}): {}", i, api.describe(status));
      }
      continue;
    }
    d.info.index = static_cast<int>(i);
    d.info.vendor = nvidia().name;
    if (api.get_name != nullptr) {
      char name[GPUFEED_NVML_DEVICE_NAME_BUFFER_SIZE] = {};
      if (api.get_name(d.handle, name, sizeof name) == GPUFEED_NVML_SUCCESS) {
        d.info.name.assign(name, strnlen(name, sizeof name));
      }
    }
    if (auto bus_id = read_bus_id(api, d.handle)) d.info.bus_id = *bus_id;
    if (api.get_memory != nullptr) {
      nvmlMemory_t m{};
      if (api.get_memory(d.handle, &m) == GPUFEED_NVML_SUCCESS) d.info.memory_total_bytes = m.total;
    }
    devices.push_back(std::move(d));
  }
  if (devices.empty()) return fail(fmt::format("no NVIDIA GPU usable ({})", first_failure));
  return {std::make_unique<NvmlSampler>(std::move(api), std::move(devices)), {}};
}

}  // namespace gpufeed
