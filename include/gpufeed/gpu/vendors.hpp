#pragma once
// What gpufeed knows about each GPU vendor, as data: one entry per vendor in
// one list (like nvtop's struct gpu_vendor). The core reads it for PCI ids,
// names, the --gpu choices, busy % and the visible-devices variables; the
// adapters read it for the sonames they dlopen(). No hardware code here: the
// sampler that opens each vendor's library is registered in src/gpu
// (gpufeed/gpu/vendor_samplers.hpp), the device runtime in src/device.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpufeed {

// A vendor library gpufeed dlopen()s and never links.
struct VendorLibrary {
  std::string_view name;                  // "NVML", "CUDA runtime": the probe's listing
  std::string_view purpose;               // "NVIDIA GPU activity (diagnose)"
  std::vector<std::string_view> sonames;  // tried in this order
};

struct GpuVendor {
  std::string_view id;               // "nvidia", "amd"
  std::string_view name;             // "NVIDIA": GpuDevice::vendor and the PCI vendor label
  std::uint16_t pci_vendor = 0;      // 0x10de
  std::string_view sampler;          // "nvml": --gpu, GpuSampler::backend(), model_source
  VendorLibrary monitoring;          // what the sampler opens
  std::string_view busy_meaning;     // what the sampler's busy % measures
  std::string_view runtime_backend;  // "cuda": --device and DeviceBackend::name()
  VendorLibrary runtime;             // what the device backend opens
  std::vector<std::string_view> visible_devices_vars;  // how a job picks its GPUs, first wins
};

// Every vendor, in the order --gpu auto tries them; the visible-devices
// variables follow the same order.
const std::vector<GpuVendor>& gpu_vendors();
// The table sorted by id, for listings that rank no vendor (the probe's).
std::vector<const GpuVendor*> gpu_vendors_by_id();

// Null when no vendor matches.
const GpuVendor* vendor_by_id(std::string_view id);
const GpuVendor* vendor_by_pci(std::uint16_t pci_vendor);
const GpuVendor* vendor_by_name(std::string_view name);
const GpuVendor* vendor_by_sampler(std::string_view sampler);
const GpuVendor* vendor_by_runtime(std::string_view runtime_backend);

// Every vendor's visible-devices variables, the first set one wins.
std::vector<std::string_view> visible_devices_vars();

// The device indices a job picked in its environment (/proc/PID/environ:
// NUL-separated NAME=VALUE), from the first visible-devices variable that
// holds indices; `variable` names it. nullopt when none does.
struct VisibleDevices {
  std::vector<int> devices;
  std::string variable;
};
std::optional<VisibleDevices> visible_devices_in_environ(std::string_view environ);

// The --gpu values: "auto", each vendor's sampler, then "none" when asked.
std::vector<std::string> sampler_choices(bool with_none);
// Those as one phrase, "auto, nvml, rocm-smi or none"; `help` spells auto
// as "auto (NVML, then rocm-smi)".
std::string sampler_choices_text(bool with_none, bool help = false);

// "a, b or c" (`last` = " or "), "a and b" (`last` = " and ").
std::string join_names(const std::vector<std::string>& items, std::string_view last);

}  // namespace gpufeed
