#include "gpufeed/pci_ids.hpp"

#include <array>

#include <fmt/format.h>

#include "gpufeed/gpu/vendors.hpp"

namespace gpufeed {
namespace {

struct KnownModel {
  std::uint16_t vendor;
  std::uint16_t device;
  const char* name;
};

// Only parts people train on; anything else is shown by its ids.
constexpr std::array kKnownModels{
    KnownModel{kPciVendorAmd, 0x738c, "AMD Instinct MI100"},
    KnownModel{kPciVendorAmd, 0x7408, "AMD Instinct MI250X"},
    KnownModel{kPciVendorAmd, 0x740c, "AMD Instinct MI250X/MI250"},
    KnownModel{kPciVendorAmd, 0x740f, "AMD Instinct MI210"},
    KnownModel{kPciVendorAmd, 0x74a1, "AMD Instinct MI300X"},
    KnownModel{kPciVendorAmd, 0x74a5, "AMD Instinct MI325X"},
    KnownModel{kPciVendorNvidia, 0x20b0, "NVIDIA A100-SXM4-40GB"},
    KnownModel{kPciVendorNvidia, 0x20b2, "NVIDIA A100-SXM4-80GB"},
    KnownModel{kPciVendorNvidia, 0x20b5, "NVIDIA A100 80GB PCIe"},
    KnownModel{kPciVendorNvidia, 0x2330, "NVIDIA H100 SXM5"},
    KnownModel{kPciVendorNvidia, 0x2331, "NVIDIA H100 PCIe"},
    KnownModel{kPciVendorNvidia, 0x2335, "NVIDIA H200"},
    KnownModel{kPciVendorNvidia, 0x233b, "NVIDIA H200 NVL"},
    KnownModel{kPciVendorNvidia, 0x2901, "NVIDIA B200"},
};

}  // namespace

DeviceKind classify_pci(std::uint16_t vendor_id, std::uint16_t class_id) {
  const unsigned base = class_id >> 8;
  // GPUs: display controllers (0x03xx; MI200 and NVIDIA parts) and processing
  // accelerators (0x12xx; MI300), but only from the GPU vendors: a BMC's VGA
  // chip is also class 0x0300.
  if ((base == 0x03 || base == 0x12) && vendor_by_pci(vendor_id) != nullptr) {
    return DeviceKind::Gpu;
  }
  if (base == 0x02) return DeviceKind::Nic;      // Ethernet, InfiniBand, ...
  if (base == 0x01) return DeviceKind::Storage;  // NVMe, SATA, SAS, virtio-blk
  return DeviceKind::Other;
}

std::string vendor_label(std::uint16_t vendor_id) {
  if (const GpuVendor* gpu = vendor_by_pci(vendor_id)) return std::string(gpu->name);
  // The other vendors of the parts a training node carries.
  struct Vendor {
    std::uint16_t id;
    const char* name;
  };
  static constexpr std::array kVendors{
      Vendor{0x15b3, "Mellanox"}, Vendor{0x8086, "Intel"},  Vendor{0x14e4, "Broadcom"}, Vendor{0x144d, "Samsung"},
      Vendor{0x1344, "Micron"},   Vendor{0x1e0f, "KIOXIA"}, Vendor{0x1d0f, "Amazon"},   Vendor{0x1af4, "virtio"},
      Vendor{0x1022, "AMD"},      Vendor{0x1077, "QLogic"},
  };
  for (const auto& v : kVendors) {
    if (v.id == vendor_id) return v.name;
  }
  return fmt::format("{:04x}", vendor_id);
}

std::string pci_model_name(std::uint16_t vendor_id, std::uint16_t device_id) {
  for (const auto& known : kKnownModels) {
    if (known.vendor == vendor_id && known.device == device_id) return known.name;
  }
  return fmt::format("{} device {:04x}", vendor_label(vendor_id), device_id);
}

std::string device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Gpu: return "gpu";
    case DeviceKind::Nic: return "nic";
    case DeviceKind::Storage: return "storage";
    case DeviceKind::Other: break;
  }
  return "other";
}

}  // namespace gpufeed
