#include "support/fake_host.hpp"

namespace gpufeed::testing {

FakeHost::FakeHost() {
  file("/proc/sys/kernel/osrelease", "6.1.0-test\n");
  file("/proc/sys/kernel/hostname", "fakehost\n");
  file("/proc/cpuinfo", "processor\t: 0\nmodel name\t: Fake EPYC 9654\n\nprocessor\t: 1\nmodel name\t: Fake EPYC 9654\n");
  file("/sys/devices/system/cpu/online", "0-7\n");
  file("/proc/self/status", "Name:\tgpufeed\nCapEff:\t0000000000000000\n");
  file("/proc/self/mountinfo", "22 1 0:21 / /proc rw - proc proc rw\n");
  file("/proc/self/cgroup", "0::/\n");
}

void FakeHost::unreadable(const std::string& absolute) const {
  std::filesystem::create_directories(root() / absolute.substr(1));
}

void FakeHost::cgroup_v2(const std::string& cpu_max, const std::string& memory_max) const {
  file("/proc/self/mountinfo",
       "22 1 0:21 / /proc rw - proc proc rw\n"
       "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
  file("/proc/self/cgroup", "0::/job\n");
  file("/sys/fs/cgroup/job/cpu.max", cpu_max);
  file("/sys/fs/cgroup/job/memory.max", memory_max);
}

}  // namespace gpufeed::testing
