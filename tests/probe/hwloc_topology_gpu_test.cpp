// On a machine with GPUs, probe finds every one of them with its NUMA node.
#include <gtest/gtest.h>

#include <set>

#include "gpufeed/pci_ids.hpp"
#include "gpufeed/probe/hwloc_topology.hpp"
#include "support/pci_sysfs.hpp"

namespace gpufeed {
namespace {

TEST(Gpu, ProbeFindsEveryGpuOnThePciBus) {
  std::vector<testing::SysfsPciDevice> gpus;
  for (const auto& d : testing::sysfs_pci_devices()) {
    if (classify_pci(d.vendor_id, d.class_id) == DeviceKind::Gpu) gpus.push_back(d);
  }
  if (gpus.empty()) GTEST_SKIP() << "no AMD or NVIDIA GPU on this machine's PCI bus";
  Topology t = load_topology(std::nullopt);
  ASSERT_EQ(t.gpus().size(), gpus.size());
  for (const auto& expected : gpus) {
    const PciDevice* found = nullptr;
    for (const auto* g : t.gpus()) {
      if (g->bus_id == expected.bus_id) found = g;
    }
    ASSERT_NE(found, nullptr) << expected.bus_id;
    if (expected.numa_node && t.numa_nodes.size() > 1) {
      EXPECT_EQ(found->numa_node, expected.numa_node) << expected.bus_id;
    }
  }
}

}  // namespace
}  // namespace gpufeed
