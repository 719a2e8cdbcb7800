#include "gpufeed/topology.hpp"

#include <algorithm>
#include <cctype>

#include "gpufeed/gpu/sampler.hpp"
#include "gpufeed/gpu/vendors.hpp"

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

namespace gpufeed {

void merge_vendor_gpus(Topology& topo, const std::vector<GpuDevice>& devices, const std::string& backend) {
  for (const auto& d : devices) {
    std::string bus = d.bus_id;
    std::transform(bus.begin(), bus.end(), bus.begin(), [](unsigned char c) { return std::tolower(c); });
    auto it = std::find_if(topo.devices.begin(), topo.devices.end(),
                           [&](const PciDevice& p) { return !bus.empty() && p.bus_id == bus; });
    if (it == topo.devices.end()) {
      PciDevice added;
      added.bus_id = bus;
      added.kind = DeviceKind::Gpu;
      const GpuVendor* vendor = vendor_by_name(d.vendor);
      added.vendor_id = vendor != nullptr ? vendor->pci_vendor : 0;
      added.local_cpus = topo.pus;
      topo.devices.push_back(added);
      it = topo.devices.end() - 1;
    }
    if (!d.name.empty()) it->model = d.name;
    it->memory_bytes = d.memory_total_bytes;
    it->model_source = backend;
  }
}

}  // namespace gpufeed
