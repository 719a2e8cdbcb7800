#include "support/pci_sysfs.hpp"

#include <filesystem>
#include <fstream>

namespace gpufeed::testing {

std::vector<SysfsPciDevice> sysfs_pci_devices() {
  std::vector<SysfsPciDevice> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/bus/pci/devices", ec)) {
    SysfsPciDevice d;
    d.bus_id = entry.path().filename().string();
    std::ifstream vendor(entry.path() / "vendor"), klass(entry.path() / "class"), numa(entry.path() / "numa_node");
    std::string v, c;
    int node = -1;
    vendor >> v;
    klass >> c;  // 0x030200: base, subclass, prog-if
    if (numa >> node && node >= 0) d.numa_node = node;
    if (v.empty() || c.size() < 6) continue;
    d.vendor_id = static_cast<std::uint16_t>(std::stoul(v, nullptr, 16));
    d.class_id = static_cast<std::uint16_t>(std::stoul(c, nullptr, 16) >> 8);
    out.push_back(d);
  }
  return out;
}

}  // namespace gpufeed::testing
