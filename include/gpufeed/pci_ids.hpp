#pragma once
// What a PCI vendor/class/device id means to gpufeed. hwloc only hands us
// numbers (Debian's hwloc has no GPU plugins), so recognising GPUs, NICs and
// storage is ours.
#include <cstdint>
#include <string>

#include "gpufeed/topology.hpp"

namespace gpufeed {

// The GPU vendors' ids, as gpufeed/gpu/vendors.hpp's table and the known
// models name them.
inline constexpr std::uint16_t kPciVendorAmd = 0x1002;
inline constexpr std::uint16_t kPciVendorNvidia = 0x10de;

// A GPU is a display or processing-accelerator function of a vendor in the
// GPU vendor table.
DeviceKind classify_pci(std::uint16_t vendor_id, std::uint16_t class_id);
std::string vendor_label(std::uint16_t vendor_id);  // "AMD", "NVIDIA", or "1af4"
// A readable model for the data-centre parts we know ("AMD Instinct MI250X"),
// else "<vendor> device <id>".
std::string pci_model_name(std::uint16_t vendor_id, std::uint16_t device_id);
std::string device_kind_name(DeviceKind kind);

}  // namespace gpufeed
