#pragma once
// Adapter: this process's view of the host, read from /proc and /sys.
#include <filesystem>

#include "gpufeed/document.hpp"
#include "gpufeed/process_view.hpp"

namespace gpufeed {

// Where /proc and /sys live: "/" on a real host, a prepared directory tree in
// tests (so cgroup layouts and unreadable files can be staged).
struct HostPaths {
  std::filesystem::path root = "/";
  std::filesystem::path operator()(std::string_view absolute) const;
};

struct InspectOptions {
  bool read_cgroup = true;   // --ignore-cgroup turns it off
  bool load_gpu_libraries = true;
};

// Throws gpufeed::Error naming a file that exists but cannot be read or parsed.
ProcessView inspect_process(const HostPaths& paths, const InspectOptions& options = {});
CgroupLimits read_cgroup_limits(const HostPaths& paths);
HostInfo inspect_host(const HostPaths& paths);

// Which vendor libraries dlopen() finds (rocm-smi, NVML, HIP, CUDA runtime).
std::vector<GpuLibrary> probe_gpu_libraries();

}  // namespace gpufeed
