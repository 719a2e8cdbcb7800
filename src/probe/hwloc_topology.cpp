#include "gpufeed/probe/hwloc_topology.hpp"

#include <hwloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "gpufeed/error.hpp"
#include "gpufeed/pci_ids.hpp"
#include "gpufeed/os/dynamic_library.hpp"

namespace gpufeed {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

CpuList to_cpulist(hwloc_const_bitmap_t set) {
  CpuList cpus;
  if (set == nullptr) return cpus;
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) cpus.push_back(i);
  return cpus;
}

// The single NUMA node a nodeset names, if it names exactly one.
std::optional<int> single_node(hwloc_const_nodeset_t nodeset) {
  if (nodeset == nullptr || hwloc_bitmap_weight(nodeset) != 1) return std::nullopt;
  return hwloc_bitmap_first(nodeset);
}

std::string bus_id(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pci) {
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", pci.domain, pci.bus, pci.dev, pci.func);
}

void check_xml_readable(const std::filesystem::path& xml) {
  std::error_code ec;
  if (!std::filesystem::exists(xml, ec)) {
    throw usage_error(fmt::format("topology file {} does not exist", xml.string()),
                      "give an hwloc XML export, e.g. from 'lstopo --of xml topo.xml'");
  }
  if (std::filesystem::is_directory(xml, ec)) {
    throw usage_error(fmt::format("topology file {} is a directory", xml.string()), "give an hwloc XML file");
  }
  std::ifstream in(xml);
  if (!in) {
    throw usage_error(fmt::format("cannot read topology file {}: {}", xml.string(), std::strerror(errno)),
                      "check its permissions");
  }
}

Topology extract(hwloc_topology_t topo) {
  Topology t;
  hwloc_obj_t root = hwloc_get_root_obj(topo);
  if (const char* host = hwloc_obj_get_info_by_name(root, "HostName")) t.hostname = host;
  t.packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  t.pus = to_cpulist(hwloc_topology_get_topology_cpuset(topo));

  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n));) {
    NumaNode node;
    node.os_index = static_cast<int>(n->os_index);
    node.memory_bytes = n->attr->numanode.local_memory;
    node.cpus = to_cpulist(n->cpuset);
    if (hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, n)) {
      node.package = static_cast<int>(pkg->logical_index);
    }
    t.numa_nodes.push_back(std::move(node));
  }

  // Some VMs expose PUs without cores: then every PU is its own core.
  const hwloc_obj_type_t core_type =
      hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  for (hwloc_obj_t c = nullptr; (c = hwloc_get_next_obj_by_type(topo, core_type, c));) {
    Core core;
    core.pus = to_cpulist(c->cpuset);
    core.numa_node = single_node(c->nodeset).value_or(-1);
    if (!core.pus.empty()) t.cores.push_back(std::move(core));
  }

  for (hwloc_obj_t d = nullptr; (d = hwloc_get_next_pcidev(topo, d));) {
    const auto& pci = d->attr->pcidev;
    PciDevice dev;
    dev.bus_id = bus_id(pci);
    dev.vendor_id = pci.vendor_id;
    dev.device_id = pci.device_id;
    dev.class_id = pci.class_id;
    dev.kind = classify_pci(pci.vendor_id, pci.class_id);
    if (dev.kind == DeviceKind::Other) continue;  // host bridges, USB, virtio balloons ...
    dev.model = pci_model_name(pci.vendor_id, pci.device_id);
    const char* named = hwloc_obj_get_info_by_name(d, "PCIDevice");
    if (named != nullptr && dev.model.find(" device ") != std::string::npos) dev.model = named;
    for (hwloc_obj_t os = d->io_first_child; os != nullptr; os = os->next_sibling) {
      if (os->type == HWLOC_OBJ_OS_DEVICE && os->name != nullptr) dev.os_names.emplace_back(os->name);
    }
    if (hwloc_obj_t local = hwloc_get_non_io_ancestor_obj(topo, d)) {
      dev.local_cpus = to_cpulist(local->cpuset);
      dev.numa_node = single_node(local->nodeset);
    }
    t.devices.push_back(std::move(dev));
  }
  return t;
}

}  // namespace

Topology load_topology(const std::optional<std::filesystem::path>& xml) {
  if (xml) check_xml_readable(*xml);
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    throw runtime_error("hwloc could not initialise a topology", "check that libhwloc is installed correctly");
  }
  TopologyPtr topo(raw);
  // Without this filter hwloc drops every PCI and OS device, even from XML.
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  // hwloc parses the file here already, so a malformed file fails here.
  if (xml && hwloc_topology_set_xml(raw, xml->c_str()) != 0) {
    throw usage_error(fmt::format("topology file {} is not a valid hwloc XML topology", xml->string()),
                      "regenerate it with 'lstopo --of xml FILE' (hwloc 2.x)");
  }
  if (hwloc_topology_load(raw) != 0) {
    if (xml) {
      throw usage_error(fmt::format("topology file {} is not a valid hwloc XML topology", xml->string()),
                        "regenerate it with 'lstopo --of xml FILE' (hwloc 2.x)");
    }
    throw runtime_error(fmt::format("hwloc could not read this machine's topology: {}", std::strerror(errno)),
                        "check that /sys is mounted, or pass --topology FILE.xml");
  }
  os::keep_loaded_under_sanitizers("/hwloc/hwloc_");  // the plugins hwloc loaded
  Topology t = extract(raw);
  t.source = xml ? xml->string() : "this machine";
  if (t.pus.empty()) {
    throw usage_error(fmt::format("topology {} has no CPUs", t.source), "give a complete hwloc XML export");
  }
  if (!xml && t.hostname.empty()) {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) == 0) t.hostname = name;
  }
  return t;
}

}  // namespace gpufeed
