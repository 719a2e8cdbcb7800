#include "gpufeed/gpu/vendors.hpp"

#include <algorithm>

#include "gpufeed/gpu/activity.hpp"
#include "gpufeed/pci_ids.hpp"

namespace gpufeed {
namespace {

template <typename Field>
const GpuVendor* find_vendor(Field field, const auto& value) {
  for (const auto& v : gpu_vendors()) {
    if (v.*field == value) return &v;
  }
  return nullptr;
}

}  // namespace

const std::vector<GpuVendor>& gpu_vendors() {
  // NVIDIA first: auto tries NVML before rocm-smi, and CUDA_VISIBLE_DEVICES
  // wins over HIP's and ROCr's variables.
  static const std::vector<GpuVendor> vendors{
      GpuVendor{
          .id = "nvidia",
          .name = "NVIDIA",
          .pci_vendor = kPciVendorNvidia,
          .sampler = "nvml",
          .monitoring = {"NVML", "NVIDIA GPU activity (diagnose)", {"libnvidia-ml.so.1"}},
          .busy_meaning = "NVML utilization: the share of the last sample period (1/6 s to 1 s, by GPU) in which at "
                          "least one kernel ran; a single tiny kernel counts as busy, so 100% does not mean the GPU "
                          "is full",
          .runtime_backend = "cuda",
          .runtime = {"CUDA runtime",
                      "NVIDIA transfer stream (tune, bench)",
                      {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"}},
          .visible_devices_vars = {"CUDA_VISIBLE_DEVICES"},
      },
      GpuVendor{
          .id = "amd",
          .name = "AMD",
          .pci_vendor = kPciVendorAmd,
          .sampler = "rocm-smi",
          .monitoring = {"rocm-smi",
                         "AMD GPU activity (diagnose)",
                         {"librocm_smi64.so.1", "librocm_smi64.so.7", "librocm_smi64.so.6", "librocm_smi64.so.5"}},
          .busy_meaning = "rocm-smi busy %: the share of recent time the GPU's graphics/compute engine was active, "
                          "as the driver averages it (about a few ms to 1 s); it does not measure how full the "
                          "compute units are",
          .runtime_backend = "hip",
          .runtime = {"HIP runtime",
                      "AMD transfer stream (tune, bench)",
                      {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"}},
          .visible_devices_vars = {"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"},
      },
  };
  return vendors;
}

std::vector<const GpuVendor*> gpu_vendors_by_id() {
  std::vector<const GpuVendor*> out;
  for (const auto& v : gpu_vendors()) out.push_back(&v);
  std::sort(out.begin(), out.end(), [](const GpuVendor* a, const GpuVendor* b) { return a->id < b->id; });
  return out;
}

const GpuVendor* vendor_by_id(std::string_view id) { return find_vendor(&GpuVendor::id, id); }
const GpuVendor* vendor_by_pci(std::uint16_t pci_vendor) { return find_vendor(&GpuVendor::pci_vendor, pci_vendor); }
const GpuVendor* vendor_by_name(std::string_view name) { return find_vendor(&GpuVendor::name, name); }
const GpuVendor* vendor_by_sampler(std::string_view sampler) { return find_vendor(&GpuVendor::sampler, sampler); }
const GpuVendor* vendor_by_runtime(std::string_view runtime_backend) {
  return find_vendor(&GpuVendor::runtime_backend, runtime_backend);
}

std::vector<std::string_view> visible_devices_vars() {
  std::vector<std::string_view> out;
  for (const auto& v : gpu_vendors()) out.insert(out.end(), v.visible_devices_vars.begin(), v.visible_devices_vars.end());
  return out;
}

std::optional<VisibleDevices> visible_devices_in_environ(std::string_view environ) {
  for (const std::string_view var : visible_devices_vars()) {
    const std::string key = std::string(var) + "=";
    // The first assignment of a name is the one getenv() returns.
    for (std::size_t pos = 0; pos < environ.size();) {
      const std::size_t end = std::min(environ.find('\0', pos), environ.size());
      const std::string_view entry = environ.substr(pos, end - pos);
      if (entry.substr(0, key.size()) == key) {
        if (auto ids = parse_visible_devices(std::string(entry.substr(key.size())))) return VisibleDevices{*ids, std::string(var)};
        break;  // set, but to UUIDs or MIG ids: the next vendor's variable may still tell
      }
      pos = end + 1;
    }
  }
  return std::nullopt;
}

std::vector<std::string> sampler_choices(bool with_none) {
  std::vector<std::string> out{"auto"};
  for (const auto& v : gpu_vendors()) out.emplace_back(v.sampler);
  if (with_none) out.emplace_back("none");
  return out;
}

std::string sampler_choices_text(bool with_none, bool help) {
  std::vector<std::string> choices = sampler_choices(with_none);
  if (help) {
    std::string order;
    for (const auto& v : gpu_vendors()) order += (order.empty() ? "" : ", then ") + std::string(v.monitoring.name);
    choices.front() = "auto (" + order + ")";
  }
  return join_names(choices, " or ");
}

std::string join_names(const std::vector<std::string>& items, std::string_view last) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? std::string(last) : std::string(", ");
    out += items[i];
  }
  return out;
}

}  // namespace gpufeed
