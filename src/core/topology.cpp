#include "gpufeed/topology.hpp"

namespace gpufeed {

std::uint64_t Topology::total_memory() const {
  std::uint64_t total = 0;
  for (const auto& node : numa_nodes) total += node.memory_bytes;
  return total;
}

std::vector<const PciDevice*> Topology::devices_of(DeviceKind kind) const {
  std::vector<const PciDevice*> out;
  for (const auto& dev : devices) {
    if (dev.kind == kind) out.push_back(&dev);
  }
  return out;
}

std::vector<const PciDevice*> Topology::gpus() const { return devices_of(DeviceKind::Gpu); }

const NumaNode* Topology::numa_node(int os_index) const {
  for (const auto& node : numa_nodes) {
    if (node.os_index == os_index) return &node;
  }
  return nullptr;
}

}  // namespace gpufeed
