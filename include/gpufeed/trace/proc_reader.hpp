#pragma once
// Adapter: reads the /proc files diagnose needs, under a HostPaths root so
// tests can stage them. Missing files (a process that just exited) read as
// nullopt, never as an error.
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/diagnose/proc_stats.hpp"
#include "gpufeed/probe/host_inspector.hpp"

namespace gpufeed {

class ProcReader {
 public:
  explicit ProcReader(HostPaths paths = {}) : paths_(std::move(paths)) {}

  std::optional<std::string> read(const std::string& absolute) const;
  std::optional<std::string> readlink(const std::string& absolute) const;

  bool alive(int pid) const;
  std::optional<PidStat> pid_stat(int pid) const;
  std::string cmdline(int pid) const;            // joined with spaces
  std::vector<int> children_of(int pid) const;   // descendants, from every /proc/N/stat ppid
  std::vector<PidStat> processes() const;        // every process's /proc/N/stat
  std::optional<CpuList> allowed_cpus(int pid) const;  // Cpus_allowed_list
  std::optional<int> current_syscall(int pid, int tid, std::optional<long>* first_arg = nullptr) const;
  std::string fd_target(int pid, int fd) const;  // readlink of /proc/PID/fd/FD ("pipe:[..]", a path)
  std::optional<ProcStat> stat() const;
  std::optional<std::uint64_t> pressure_total_us(const std::string& resource) const;  // cpu, io, memory
  std::optional<MemInfo> meminfo() const;

 private:
  HostPaths paths_;
};

}  // namespace gpufeed
