#pragma once
// CPU lists in the kernel's notation ("0-3,8,10-11"), as used by
// /sys/devices/system/cpu/online, cpuset.cpus and taskset -c.
#include <string>
#include <string_view>
#include <vector>

namespace gpufeed {

using CpuList = std::vector<int>;  // sorted, unique OS CPU numbers

// Throws gpufeed::Error (usage) naming `text` when it is not a CPU list.
CpuList parse_cpulist(std::string_view text);
std::string format_cpulist(const CpuList& cpus);

CpuList intersect(const CpuList& a, const CpuList& b);

}  // namespace gpufeed
