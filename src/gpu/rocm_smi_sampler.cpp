// AMD GPU activity through rocm-smi-lib, loaded with dlopen() at run time.
// Only rocm_smi/rocm_smi.h is used at build time, for the types and the
// function signatures (decltype); the library itself is never linked
// (Debian's CMake config for it is broken, and a host without it must start).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "gpufeed/os/dynamic_library.hpp"
#include "gpufeed/gpu/vendor_samplers.hpp"
#include "gpufeed/gpu/vendors.hpp"

#if __has_include(<rocm_smi/rocm_smi.h>)
#include <rocm_smi/rocm_smi.h>
#define GPUFEED_HAVE_ROCM_SMI_HEADER 1
#endif

namespace gpufeed {

std::string rocm_smi_bus_id(std::uint64_t bdfid) {
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", bdfid >> 32, (bdfid >> 8) & 0xff, (bdfid >> 3) & 0x1f,
                     bdfid & 0x7);
}

#ifdef GPUFEED_HAVE_ROCM_SMI_HEADER

namespace {

const GpuVendor& amd() { return *vendor_by_id("amd"); }

// "librocm_smi64.so.1, .so.7": the first soname whole, the others from
// their ".so" on where they share its stem.
std::string tried_sonames(const std::vector<std::string_view>& sonames) {
  std::string out;
  const std::string_view first = sonames.empty() ? std::string_view() : sonames.front();
  const std::string_view stem = first.substr(0, first.find(".so"));
  for (const std::string_view soname : sonames) {
    const bool shares_stem = !out.empty() && soname.substr(0, stem.size()) == stem;
    out += fmt::format("{}{}", out.empty() ? "" : ", ", shares_stem ? soname.substr(stem.size()) : soname);
  }
  return out;
}

// Sends fd 2 to /dev/null while alive: rsmi_init prints its failures
// ("Failed to open drm root directory ...") straight to stderr. Buffered
// output on either side is flushed so nothing leaks into or out of the window.
class StderrSilenced {
 public:
  StderrSilenced() {
    flush();
    saved_ = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    if (saved_ < 0) return;
    int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null_fd < 0 || dup2(null_fd, STDERR_FILENO) < 0) {
      close(saved_);
      saved_ = -1;
    }
    if (null_fd >= 0) close(null_fd);
  }
  ~StderrSilenced() {
    flush();
    if (saved_ >= 0) {
      dup2(saved_, STDERR_FILENO);
      close(saved_);
    }
  }
  StderrSilenced(const StderrSilenced&) = delete;
  StderrSilenced& operator=(const StderrSilenced&) = delete;

 private:
  static void flush() {
    std::fflush(stderr);
    std::cerr.flush();
    std::clog.flush();
  }
  int saved_ = -1;
};

struct RocmSmiApi {
  os::DynamicLibrary library;
  // Required.
  decltype(&rsmi_init) init = nullptr;
  decltype(&rsmi_shut_down) shut_down = nullptr;
  decltype(&rsmi_num_monitor_devices) num_devices = nullptr;
  // Optional: nullptr disables that reading.
  decltype(&rsmi_status_string) status_string = nullptr;
  decltype(&rsmi_dev_name_get) name = nullptr;
  decltype(&rsmi_dev_pci_id_get) pci_id = nullptr;
  decltype(&rsmi_dev_busy_percent_get) busy_percent = nullptr;
  decltype(&rsmi_dev_memory_total_get) memory_total = nullptr;
  decltype(&rsmi_dev_memory_usage_get) memory_usage = nullptr;
  decltype(&rsmi_dev_power_ave_get) power_average = nullptr;
  decltype(&rsmi_dev_temp_metric_get) temperature = nullptr;
  decltype(&rsmi_compute_process_info_get) process_info = nullptr;
  decltype(&rsmi_compute_process_gpus_get) process_gpus = nullptr;

  std::string describe(rsmi_status_t status) const {
    const char* text = nullptr;
    if (status_string != nullptr && status_string(status, &text) == RSMI_STATUS_SUCCESS && text != nullptr &&
        *text != '\0') {
      return fmt::format("{} (rsmi status {})", text, static_cast<unsigned>(status));
    }
    return fmt::format("rsmi status {}", static_cast<unsigned>(status));
  }
};

class RocmSmiSampler final : public GpuSampler {
 public:
  RocmSmiSampler(RocmSmiApi api, std::vector<GpuDevice> devices)
      : api_(std::move(api)), devices_(std::move(devices)) {}
  ~RocmSmiSampler() override {
    api_.shut_down();
    api_.library.reset();
  }
  RocmSmiSampler(const RocmSmiSampler&) = delete;
  RocmSmiSampler& operator=(const RocmSmiSampler&) = delete;

  std::string backend() const override { return std::string(amd().sampler); }
  std::vector<GpuDevice> devices() const override { return devices_; }

  std::vector<GpuSample> sample(double t_s) override {
    std::vector<GpuSample> out;
    out.reserve(devices_.size());
    for (const auto& d : devices_) {
      const auto i = static_cast<std::uint32_t>(d.index);
      GpuSample s;
      s.t_s = t_s;
      s.device = d.index;
      if (api_.busy_percent != nullptr) {
        std::uint32_t busy = 0;
        if (api_.busy_percent(i, &busy) == RSMI_STATUS_SUCCESS) s.busy_pct = busy;
      }
      if (api_.memory_usage != nullptr) {
        std::uint64_t used = 0;
        if (api_.memory_usage(i, RSMI_MEM_TYPE_VRAM, &used) == RSMI_STATUS_SUCCESS) s.memory_used_bytes = used;
      }
      if (api_.power_average != nullptr) {
        std::uint64_t microwatts = 0;
        if (api_.power_average(i, 0, &microwatts) == RSMI_STATUS_SUCCESS) s.power_w = microwatts / 1e6;
      }
      if (api_.temperature != nullptr) {
        std::int64_t millidegrees = 0;
        if (api_.temperature(i, RSMI_TEMP_TYPE_EDGE, RSMI_TEMP_CURRENT, &millidegrees) == RSMI_STATUS_SUCCESS) {
          s.temperature_c = millidegrees / 1000.0;
        }
      }
      out.push_back(s);
    }
    return out;
  }

  std::vector<GpuProcess> processes(int device) override {
    if (api_.process_info == nullptr) return {};
    // Without the pid → GPUs call, processes can be placed only on a
    // single-GPU host.
    if (api_.process_gpus == nullptr && devices_.size() != 1) return {};
    std::vector<rsmi_process_info_t> procs;
    for (int round = 0; round < 4; ++round) {
      std::uint32_t count = 0;
      if (api_.process_info(nullptr, &count) != RSMI_STATUS_SUCCESS) return {};
      if (count == 0) return {};
      procs.resize(count + 4);
      count = static_cast<std::uint32_t>(procs.size());
      rsmi_status_t status = api_.process_info(procs.data(), &count);
      if (status == RSMI_STATUS_INSUFFICIENT_SIZE) continue;  // more appeared meanwhile
      if (status != RSMI_STATUS_SUCCESS) return {};
      procs.resize(std::min<size_t>(count, procs.size()));
      break;
    }
    std::vector<GpuProcess> out;
    for (const auto& p : procs) {
      std::vector<std::uint32_t> gpus;
      if (api_.process_gpus != nullptr) {
        std::uint32_t n = 0;
        if (api_.process_gpus(p.process_id, nullptr, &n) != RSMI_STATUS_SUCCESS || n == 0) continue;
        gpus.resize(n);
        if (api_.process_gpus(p.process_id, gpus.data(), &n) != RSMI_STATUS_SUCCESS) continue;
        gpus.resize(std::min<size_t>(n, gpus.size()));
      } else {
        gpus.push_back(static_cast<std::uint32_t>(devices_.front().index));
      }
      if (std::find(gpus.begin(), gpus.end(), static_cast<std::uint32_t>(device)) == gpus.end()) continue;
      GpuProcess g;
      g.pid = static_cast<int>(p.process_id);
      // vram_usage is the process's total over all its GPUs: only a
      // single-GPU process's figure belongs to this device.
      if (gpus.size() == 1) g.memory_bytes = p.vram_usage;
      out.push_back(g);
    }
    return out;
  }

 private:
  RocmSmiApi api_;
  std::vector<GpuDevice> devices_;
};

}  // namespace

GpuOpenResult open_rocm_smi(const std::string& library) {
  RocmSmiApi api;
  std::string name = library;
  if (library.empty()) {
    std::string errors;
    const auto& sonames = amd().monitoring.sonames;
    for (const std::string_view soname : sonames) {
      api.library = os::DynamicLibrary(std::string(soname));
      if (api.library) {
        name = soname;
        break;
      }
      if (errors.empty()) errors = api.library.error();
    }
    if (!api.library) {
      return {nullptr, fmt::format("rocm-smi not found (tried {}; {})", tried_sonames(sonames), errors)};
    }
  } else {
    api.library = os::DynamicLibrary(library);
    if (!api.library) return {nullptr, fmt::format("rocm-smi not found ({})", api.library.error())};
  }

  const auto& lib = api.library;
  api.init = lib.symbol<decltype(api.init)>("rsmi_init");
  api.shut_down = lib.symbol<decltype(api.shut_down)>("rsmi_shut_down");
  api.num_devices = lib.symbol<decltype(api.num_devices)>("rsmi_num_monitor_devices");
  for (auto [present, symbol] : {std::pair{api.init != nullptr, "rsmi_init"},
                                 std::pair{api.shut_down != nullptr, "rsmi_shut_down"},
                                 std::pair{api.num_devices != nullptr, "rsmi_num_monitor_devices"}}) {
    if (!present) return {nullptr, fmt::format("rocm-smi unusable ({} lacks {})", name, symbol)};
  }
  api.status_string = lib.symbol<decltype(api.status_string)>("rsmi_status_string");
  api.name = lib.symbol<decltype(api.name)>("rsmi_dev_name_get");
  api.pci_id = lib.symbol<decltype(api.pci_id)>("rsmi_dev_pci_id_get");
  api.busy_percent = lib.symbol<decltype(api.busy_percent)>("rsmi_dev_busy_percent_get");
  api.memory_total = lib.symbol<decltype(api.memory_total)>("rsmi_dev_memory_total_get");
  api.memory_usage = lib.symbol<decltype(api.memory_usage)>("rsmi_dev_memory_usage_get");
  api.power_average = lib.symbol<decltype(api.power_average)>("rsmi_dev_power_ave_get");
  api.temperature = lib.symbol<decltype(api.temperature)>("rsmi_dev_temp_metric_get");
  api.process_info = lib.symbol<decltype(api.process_info)>("rsmi_compute_process_info_get");
  api.process_gpus = lib.symbol<decltype(api.process_gpus)>("rsmi_compute_process_gpus_get");

  rsmi_status_t status;
  {
    StderrSilenced quiet;
    status = api.init(0);
  }
  // A failed rsmi_init needs no rsmi_shut_down (5.2.3 answers it with 8).
  if (status != RSMI_STATUS_SUCCESS) {
    return {nullptr, fmt::format("no AMD GPU found (rsmi_init: {})", api.describe(status))};
  }
  auto fail = [&api](std::string why) {
    api.shut_down();
    return GpuOpenResult{nullptr, std::move(why)};
  };

  std::uint32_t count = 0;
  if (status = api.num_devices(&count); status != RSMI_STATUS_SUCCESS) {
    return fail(fmt::format("rocm-smi cannot count GPUs (rsmi_num_monitor_devices: {})", api.describe(status)));
  }
  if (count == 0) return fail("no AMD GPU found (rocm-smi reports 0 devices)");

  std::vector<GpuDevice> devices;
  for (std::uint32_t i = 0; i < count; ++i) {
    GpuDevice d;
    d.index = static_cast<int>(i);
    d.vendor = amd().name;
    if (api.name != nullptr) {
      char text[256] = {};
      rsmi_status_t s = api.name(i, text, sizeof text - 1);
      if (s == RSMI_STATUS_SUCCESS || s == RSMI_STATUS_INSUFFICIENT_SIZE) {
        d.name.assign(text, strnlen(text, sizeof text));
      }
    }
    if (api.pci_id != nullptr) {
      std::uint64_t bdfid = 0;
      if (api.pci_id(i, &bdfid) == RSMI_STATUS_SUCCESS) d.bus_id = rocm_smi_bus_id(bdfid);
    }
    if (api.memory_total != nullptr) {
      std::uint64_t total = 0;
      if (api.memory_total(i, RSMI_MEM_TYPE_VRAM, &total) == RSMI_STATUS_SUCCESS) d.memory_total_bytes = total;
    }
    devices.push_back(std::move(d));
  }
  return {std::make_unique<RocmSmiSampler>(std::move(api), std::move(devices)), {}};
}

#else  // no rocm_smi/rocm_smi.h at build time

GpuOpenResult open_rocm_smi(const std::string& /*library*/) {
  return {nullptr, "rocm-smi support not built (rocm_smi/rocm_smi.h was missing at build time)"};
}

#endif

}  // namespace gpufeed
