#pragma once
// The PCI devices Linux lists under /sys/bus/pci/devices: the ground truth
// that hwloc's view of this machine is checked against.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpufeed::testing {

struct SysfsPciDevice {
  std::string bus_id;
  std::uint16_t vendor_id = 0;
  std::uint16_t class_id = 0;  // base << 8 | subclass
  std::optional<int> numa_node;
};

std::vector<SysfsPciDevice> sysfs_pci_devices();

}  // namespace gpufeed::testing
