#pragma once
// What this process may use and do on this host: CPUs, cgroup limits,
// tracing prerequisites, GPU libraries. Filled by src/probe/host_inspector.cpp;
// the parsers below are pure so they are tested on plain strings.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpufeed/cpulist.hpp"

namespace gpufeed {

struct CgroupLimits {
  std::string version = "none";            // "v2", "v1" or "none"
  std::optional<double> cpu_quota_cores;   // cpu.max quota / period; unset = no limit
  std::optional<std::uint64_t> memory_max_bytes;  // unset = no limit
  std::string cpu_file;                    // where the limits were read, for the report
  std::string memory_file;
};

struct Privileges {
  bool root = false;
  bool cap_sys_admin = false;
  bool cap_bpf = false;
  bool cap_perfmon = false;
  // eBPF tracing needs CAP_BPF + CAP_PERFMON (or CAP_SYS_ADMIN on old kernels).
  bool can_trace() const { return cap_sys_admin || (cap_bpf && cap_perfmon); }
};

struct GpuLibrary {
  std::string name;      // "rocm-smi", "NVML", "HIP runtime", "CUDA runtime"
  std::string purpose;   // what gpufeed uses it for
  bool loadable = false;
  std::string detail;    // the path that loaded, or why none did
};

struct ProcessView {
  CpuList allowed_cpus;              // sched_getaffinity
  CgroupLimits cgroup;
  std::string kernel;                // uname -r
  bool btf = false;                  // /sys/kernel/btf/vmlinux present
  Privileges privileges;
  std::optional<std::string> tracefs;  // mount point when mounted
  std::vector<GpuLibrary> gpu_libraries;

  // CPUs the process can keep busy at once: affinity, capped by the quota.
  int usable_cpus() const;
};

// ---- parsers (each throws gpufeed::Error naming `source` on malformed text)

// cgroup v2 cpu.max: "max 100000" or "200000 100000" -> quota in cores.
std::optional<double> parse_cpu_max(std::string_view text, std::string_view source);
// cgroup v1 cpu.cfs_quota_us and cpu.cfs_period_us (-1 = no limit).
std::optional<double> parse_cfs_quota(std::string_view quota, std::string_view period,
                                      std::string_view source);
// cgroup v2 memory.max ("max" or bytes) and v1 memory.limit_in_bytes (a huge
// number means no limit).
std::optional<std::uint64_t> parse_memory_max(std::string_view text, std::string_view source);

// The CapEff mask from /proc/self/status.
std::uint64_t parse_cap_eff(std::string_view status, std::string_view source);
Privileges privileges_from(std::uint64_t cap_eff, unsigned euid);

struct Mount {
  std::string mount_point;
  std::string fs_type;
  std::string source;
  std::string root;     // the mounted subtree of the filesystem (cgroup paths)
  std::string options;  // super options; name the controllers of a cgroup v1 mount
  unsigned dev_major = 0;  // st_dev of files on this mount
  unsigned dev_minor = 0;
};
std::vector<Mount> parse_mountinfo(std::string_view text);

struct CgroupMembership {
  std::string v2_path;                                  // the "0::" line
  std::vector<std::pair<std::string, std::string>> v1;  // controller -> path
};
CgroupMembership parse_proc_cgroup(std::string_view text);

}  // namespace gpufeed
