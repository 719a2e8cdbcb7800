#include "gpufeed/probe/host_inspector.hpp"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "gpufeed/error.hpp"

namespace gpufeed {
namespace {

// The file's text; nullopt when it does not exist (that kernel or cgroup
// layout simply lacks it). A file that exists but cannot be read is an error.
std::optional<std::string> read_optional(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  auto fail = [&](int err) {
    return runtime_error(fmt::format("cannot read {}: {}", path.string(), std::strerror(err)),
                         "run gpufeed where it can read /proc and /sys (or pass --ignore-cgroup for cgroup files)");
  };
  if (std::filesystem::is_directory(path, ec)) throw fail(EISDIR);
  std::ifstream in(path);
  if (!in) throw fail(errno);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw fail(errno);
  return text.str();
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

CpuList affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  CpuList cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  }
  return cpus;
}

// The cgroup directory of `path` inside a mount: cgroup paths in
// /proc/self/cgroup are relative to the hierarchy root, which the mount may
// only show part of (containers mount their own subtree at "/").
std::filesystem::path cgroup_dir(const HostPaths& paths, const Mount& m, std::string path) {
  if (m.root != "/" && path.rfind(m.root, 0) == 0) path = path.substr(m.root.size());
  return paths(m.mount_point) / std::filesystem::path(path).relative_path();
}

// Walks from the process's cgroup up to the mount, reading `file` at each
// level: a limit set on a parent also binds the child. Returns the tightest.
template <typename T, typename Read>
std::optional<T> tightest(const std::filesystem::path& leaf, const std::filesystem::path& top, Read read,
                          std::string& where) {
  std::optional<T> best;
  for (auto dir = leaf;; dir = dir.parent_path()) {
    if (auto v = read(dir); v && (!best || *v < *best)) {
      best = v;
      where = dir.string();
    }
    if (dir == top || !dir.has_relative_path() || dir == dir.parent_path()) break;
  }
  return best;
}

}  // namespace

std::filesystem::path HostPaths::operator()(std::string_view absolute) const {
  return root / std::filesystem::path(absolute).relative_path();
}

CgroupLimits read_cgroup_limits(const HostPaths& paths) {
  CgroupLimits limits;
  const auto membership = parse_proc_cgroup(read_optional(paths("/proc/self/cgroup")).value_or(""));
  const auto mounts = parse_mountinfo(read_optional(paths("/proc/self/mountinfo")).value_or(""));

  auto v1_mount = [&](std::string_view controller) -> const Mount* {
    for (const auto& m : mounts) {
      if (m.fs_type != "cgroup") continue;
      std::string opts = "," + m.options + ",";
      if (opts.find(fmt::format(",{},", controller)) != std::string::npos) return &m;
    }
    return nullptr;
  };
  auto v1_path = [&](std::string_view controller) -> std::string {
    for (const auto& [name, path] : membership.v1) {
      if (name == controller) return path;
    }
    return "/";
  };
  const Mount* v2 = nullptr;
  for (const auto& m : mounts) {
    if (m.fs_type == "cgroup2") v2 = &m;
  }
  const Mount* cpu1 = v1_mount("cpu");
  const Mount* mem1 = v1_mount("memory");
  limits.version = (cpu1 || mem1) ? (v2 ? "hybrid" : "v1") : (v2 ? "v2" : "none");

  std::string where;
  if (cpu1) {
    const auto leaf = cgroup_dir(paths, *cpu1, v1_path("cpu"));
    limits.cpu_quota_cores = tightest<double>(
        leaf, paths(cpu1->mount_point),
        [](const std::filesystem::path& dir) -> std::optional<double> {
          auto quota = read_optional(dir / "cpu.cfs_quota_us");
          auto period = read_optional(dir / "cpu.cfs_period_us");
          if (!quota || !period) return std::nullopt;
          return parse_cfs_quota(*quota, *period, (dir / "cpu.cfs_quota_us").string());
        },
        where);
    limits.cpu_file = where.empty() ? "" : where + "/cpu.cfs_quota_us";
  } else if (v2) {
    const auto leaf = cgroup_dir(paths, *v2, membership.v2_path.empty() ? "/" : membership.v2_path);
    limits.cpu_quota_cores = tightest<double>(
        leaf, paths(v2->mount_point),
        [](const std::filesystem::path& dir) -> std::optional<double> {
          auto text = read_optional(dir / "cpu.max");
          return text ? parse_cpu_max(*text, (dir / "cpu.max").string()) : std::nullopt;
        },
        where);
    limits.cpu_file = where.empty() ? "" : where + "/cpu.max";
  }

  where.clear();
  if (mem1) {
    const auto leaf = cgroup_dir(paths, *mem1, v1_path("memory"));
    limits.memory_max_bytes = tightest<std::uint64_t>(
        leaf, paths(mem1->mount_point),
        [](const std::filesystem::path& dir) -> std::optional<std::uint64_t> {
          auto text = read_optional(dir / "memory.limit_in_bytes");
          return text ? parse_memory_max(*text, (dir / "memory.limit_in_bytes").string()) : std::nullopt;
        },
        where);
    limits.memory_file = where.empty() ? "" : where + "/memory.limit_in_bytes";
  } else if (v2) {
    const auto leaf = cgroup_dir(paths, *v2, membership.v2_path.empty() ? "/" : membership.v2_path);
    limits.memory_max_bytes = tightest<std::uint64_t>(
        leaf, paths(v2->mount_point),
        [](const std::filesystem::path& dir) -> std::optional<std::uint64_t> {
          auto text = read_optional(dir / "memory.max");
          return text ? parse_memory_max(*text, (dir / "memory.max").string()) : std::nullopt;
        },
        where);
    limits.memory_file = where.empty() ? "" : where + "/memory.max";
  }
  return limits;
}

ProcessView inspect_process(const HostPaths& paths, const InspectOptions& options) {
  ProcessView view;
  view.allowed_cpus = affinity();
  if (options.read_cgroup) view.cgroup = read_cgroup_limits(paths);

  if (auto release = read_optional(paths("/proc/sys/kernel/osrelease"))) {
    view.kernel = first_line(*release);
  } else {
    utsname u{};
    if (uname(&u) == 0) view.kernel = u.release;
  }
  std::error_code ec;
  view.btf = std::filesystem::exists(paths("/sys/kernel/btf/vmlinux"), ec);

  const auto status_path = paths("/proc/self/status");
  const auto status = read_optional(status_path);
  view.privileges = privileges_from(status ? parse_cap_eff(*status, status_path.string()) : 0, geteuid());

  const auto mounts = parse_mountinfo(read_optional(paths("/proc/self/mountinfo")).value_or(""));
  for (const auto& m : mounts) {
    if (m.fs_type == "tracefs" && (!view.tracefs || m.mount_point == "/sys/kernel/tracing")) {
      view.tracefs = m.mount_point;
    }
  }
  if (options.load_gpu_libraries) view.gpu_libraries = probe_gpu_libraries();
  return view;
}

HostInfo inspect_host(const HostPaths& paths) {
  HostInfo host;
  if (auto name = read_optional(paths("/proc/sys/kernel/hostname"))) host.hostname = first_line(*name);
  if (auto release = read_optional(paths("/proc/sys/kernel/osrelease"))) host.kernel = first_line(*release);
  if (auto cpuinfo = read_optional(paths("/proc/cpuinfo"))) {
    std::istringstream in(*cpuinfo);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
        host.cpu_model = line.substr(line.find(':') + 2);
        break;
      }
    }
  }
  if (auto online = read_optional(paths("/sys/devices/system/cpu/online"))) {
    host.cpus = static_cast<int>(parse_cpulist(*online).size());
  } else {
    host.cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  }
  if (host.cpu_model.empty()) host.cpu_model = "unknown";
  return host;
}

}  // namespace gpufeed
