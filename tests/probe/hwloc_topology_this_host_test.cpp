// hwloc and the host inspector on the machine the tests run on, checked
// against what Linux itself reports.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "gpufeed/pci_ids.hpp"
#include "gpufeed/probe/host_inspector.hpp"
#include "gpufeed/probe/hwloc_topology.hpp"
#include "support/pci_sysfs.hpp"

namespace gpufeed {
namespace {

std::string slurp(const char* path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

TEST(ThisHost, TopologyMatchesTheKernelsCpuAndNodeCounts) {
  Topology t = load_topology(std::nullopt);
  EXPECT_EQ(t.source, "this machine");
  EXPECT_EQ(t.pus, parse_cpulist(slurp("/sys/devices/system/cpu/online")));
  size_t nodes = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const auto name = e.path().filename().string();
    nodes += name.rfind("node", 0) == 0 && name.size() > 4 && std::isdigit(static_cast<unsigned char>(name[4]));
  }
  EXPECT_EQ(t.numa_nodes.size(), std::max<size_t>(nodes, 1));
  EXPECT_GE(t.cores.size(), 1U);
  EXPECT_LE(t.cores.size(), t.pus.size());
  EXPECT_GT(t.total_memory(), 0U);
}

TEST(ThisHost, EveryGpuNicAndStorageControllerOnThePciBusIsListed) {
  Topology t = load_topology(std::nullopt);
  std::set<std::string> listed;
  for (const auto& d : t.devices) listed.insert(d.bus_id);
  size_t expected = 0;
  for (const auto& d : testing::sysfs_pci_devices()) {
    if (classify_pci(d.vendor_id, d.class_id) == DeviceKind::Other) continue;
    ++expected;
    EXPECT_TRUE(listed.count(d.bus_id)) << d.bus_id << " (class " << std::hex << d.class_id << ") missing";
  }
  EXPECT_EQ(t.devices.size(), expected);
}

TEST(ThisHost, ProcessViewMatchesTheKernel) {
  auto view = inspect_process(HostPaths{}, InspectOptions{});
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_EQ(view.allowed_cpus.size(), static_cast<size_t>(CPU_COUNT(&set)));
  utsname u{};
  ASSERT_EQ(uname(&u), 0);
  EXPECT_EQ(view.kernel, u.release);
  EXPECT_EQ(view.btf, std::filesystem::exists("/sys/kernel/btf/vmlinux"));
  EXPECT_EQ(view.privileges.root, geteuid() == 0);
  EXPECT_TRUE(view.cgroup.version == "v1" || view.cgroup.version == "v2" || view.cgroup.version == "hybrid" ||
              view.cgroup.version == "none");
  ASSERT_EQ(view.gpu_libraries.size(), 4U);
  for (const auto& lib : view.gpu_libraries) EXPECT_FALSE(lib.detail.empty()) << lib.name;
}

TEST(ThisHost, HostInfoIsFilled) {
  auto info = inspect_host(HostPaths{});
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  EXPECT_EQ(info.hostname, name);
  EXPECT_EQ(info.cpus, sysconf(_SC_NPROCESSORS_ONLN));
  EXPECT_FALSE(info.cpu_model.empty());
}

}  // namespace
}  // namespace gpufeed
