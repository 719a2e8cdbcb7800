#pragma once
// The machine as gpufeed needs it: plain values filled by the hwloc adapter
// (src/probe/hwloc_topology.cpp) or built by hand in tests.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/cpulist.hpp"

namespace gpufeed {

enum class DeviceKind { Gpu, Nic, Storage, Other };

struct NumaNode {
  int os_index = 0;
  int package = -1;             // logical package index, -1 when unknown
  std::uint64_t memory_bytes = 0;
  CpuList cpus;                 // PUs (hardware threads) of the node
};

struct Core {
  int numa_node = -1;           // os_index of its NUMA node, -1 when unknown
  CpuList pus;                  // its hardware threads; pus.front() names the core
};

struct PciDevice {
  std::string bus_id;           // "0000:c1:00.0"
  std::uint16_t vendor_id = 0;
  std::uint16_t device_id = 0;
  std::uint16_t class_id = 0;   // PCI base class << 8 | subclass
  DeviceKind kind = DeviceKind::Other;
  std::string model;            // best known name; may be empty
  std::vector<std::string> os_names;  // nvme0n1, ib0, eth0 ...
  std::optional<int> numa_node;       // unset when the device is not local to one node
  CpuList local_cpus;                 // the CPUs of its closest non-I/O ancestor
  std::optional<std::uint64_t> memory_bytes;  // GPU memory, from the vendor library
  std::string model_source = "pci";   // "pci", or the vendor library that named it ("nvml", "rocm-smi")
};

struct Topology {
  std::string source;           // "this machine" or the XML path
  std::string hostname;         // from the topology (XML fixtures carry one)
  int packages = 0;
  std::vector<NumaNode> numa_nodes;
  std::vector<Core> cores;
  CpuList pus;                  // every PU in the topology
  std::vector<PciDevice> devices;

  std::uint64_t total_memory() const;
  std::vector<const PciDevice*> gpus() const;
  std::vector<const PciDevice*> devices_of(DeviceKind kind) const;
  const NumaNode* numa_node(int os_index) const;
};

struct GpuDevice;
// Names GPUs (model, memory) from a vendor library, matched by PCI bus id;
// GPUs the library knows but hwloc did not list are added without locality.
void merge_vendor_gpus(Topology& topo, const std::vector<GpuDevice>& devices, const std::string& backend);

}  // namespace gpufeed
