// The host inspector on staged /proc and /sys trees.
#include <gtest/gtest.h>

#include "gpufeed/error.hpp"
#include "gpufeed/probe/host_inspector.hpp"
#include "support/fake_host.hpp"

namespace gpufeed {
namespace {

using testing::FakeHost;

constexpr InspectOptions kNoLibraries{true, false};

TEST(HostInspector, ReadsCgroupV2Limits) {
  FakeHost host;
  host.cgroup_v2("200000 100000\n", "8589934592\n");
  auto view = inspect_process(HostPaths{host.root()}, kNoLibraries);
  EXPECT_EQ(view.cgroup.version, "v2");
  EXPECT_DOUBLE_EQ(view.cgroup.cpu_quota_cores.value(), 2.0);
  EXPECT_EQ(view.cgroup.memory_max_bytes.value(), 8589934592ULL);
  EXPECT_NE(view.cgroup.cpu_file.find("job/cpu.max"), std::string::npos);
  EXPECT_EQ(view.kernel, "6.1.0-test");
}

TEST(HostInspector, AParentLimitBindsTheChild) {
  FakeHost host;
  host.cgroup_v2("max 100000\n", "max\n");
  host.file("/sys/fs/cgroup/cpu.max", "100000 100000\n");
  host.file("/sys/fs/cgroup/memory.max", "1073741824\n");
  auto limits = read_cgroup_limits(HostPaths{host.root()});
  EXPECT_DOUBLE_EQ(limits.cpu_quota_cores.value(), 1.0);
  EXPECT_EQ(limits.memory_max_bytes.value(), 1073741824ULL);
  EXPECT_EQ(limits.memory_file, (host.root() / "sys/fs/cgroup").string() + "/memory.max");
}

TEST(HostInspector, NoLimitIsNoLimit) {
  FakeHost host;
  host.cgroup_v2("max 100000\n", "max\n");
  auto limits = read_cgroup_limits(HostPaths{host.root()});
  EXPECT_FALSE(limits.cpu_quota_cores);
  EXPECT_FALSE(limits.memory_max_bytes);
}

TEST(HostInspector, ReadsCgroupV1Controllers) {
  FakeHost host;
  host.file("/proc/self/mountinfo",
            "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
            "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
            "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
  host.file("/proc/self/cgroup", "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n");
  host.file("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "400000\n");
  host.file("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  host.file("/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "4294967296\n");
  host.file("/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  auto limits = read_cgroup_limits(HostPaths{host.root()});
  EXPECT_EQ(limits.version, "hybrid");
  EXPECT_DOUBLE_EQ(limits.cpu_quota_cores.value(), 4.0);
  EXPECT_EQ(limits.memory_max_bytes.value(), 4294967296ULL);
}

TEST(HostInspector, ContainerMountsItsOwnSubtree) {
  FakeHost host;
  // Inside a container the cgroup namespace root is mounted at /sys/fs/cgroup.
  host.file("/proc/self/mountinfo", "30 1 0:26 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  host.file("/proc/self/cgroup", "0::/kubepods/pod1\n");
  host.file("/sys/fs/cgroup/cpu.max", "50000 100000\n");
  auto limits = read_cgroup_limits(HostPaths{host.root()});
  EXPECT_DOUBLE_EQ(limits.cpu_quota_cores.value(), 0.5);
}

TEST(HostInspector, UnreadableCgroupFileIsAnErrorNamingIt) {
  FakeHost host;
  host.cgroup_v2("max 100000\n", "max\n");
  std::filesystem::remove(host.root() / "sys/fs/cgroup/job/memory.max");
  host.unreadable("/sys/fs/cgroup/job/memory.max");
  try {
    read_cgroup_limits(HostPaths{host.root()});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_NE(std::string(e.what()).find("job/memory.max"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("--ignore-cgroup"), std::string::npos);
  }
  // ... and --ignore-cgroup gets past it.
  EXPECT_NO_THROW(inspect_process(HostPaths{host.root()}, InspectOptions{false, false}));
}

TEST(HostInspector, MalformedCgroupFileIsAnErrorNamingIt) {
  FakeHost host;
  host.cgroup_v2("two cpus\n", "max\n");
  try {
    read_cgroup_limits(HostPaths{host.root()});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cpu.max"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("two cpus"), std::string::npos) << e.what();
  }
}

TEST(HostInspector, PrivilegesTracefsAndBtf) {
  FakeHost host;
  host.file("/proc/self/status", "CapEff:\t000000c000000000\n");  // CAP_PERFMON + CAP_BPF
  host.file("/proc/self/mountinfo", "40 1 0:12 / /sys/kernel/tracing rw - tracefs nodev rw\n");
  host.file("/sys/kernel/btf/vmlinux", "BTF");
  auto view = inspect_process(HostPaths{host.root()}, kNoLibraries);
  EXPECT_TRUE(view.privileges.cap_bpf);
  EXPECT_TRUE(view.privileges.cap_perfmon);
  EXPECT_FALSE(view.privileges.cap_sys_admin);
  EXPECT_TRUE(view.privileges.can_trace());
  EXPECT_EQ(view.tracefs.value_or(""), "/sys/kernel/tracing");
  EXPECT_TRUE(view.btf);
}

TEST(HostInspector, WithoutBtfOrTracefs) {
  FakeHost host;
  auto view = inspect_process(HostPaths{host.root()}, kNoLibraries);
  EXPECT_FALSE(view.btf);
  EXPECT_FALSE(view.tracefs);
  EXPECT_FALSE(view.privileges.can_trace());
  EXPECT_EQ(view.cgroup.version, "none");
}

TEST(HostInspector, HostInfo) {
  FakeHost host;
  auto info = inspect_host(HostPaths{host.root()});
  EXPECT_EQ(info.hostname, "fakehost");
  EXPECT_EQ(info.kernel, "6.1.0-test");
  EXPECT_EQ(info.cpu_model, "Fake EPYC 9654");
  EXPECT_EQ(info.cpus, 8);
}

}  // namespace
}  // namespace gpufeed
