#pragma once
// Adapter: reads the /proc files diagnose needs (the ProcSource port), under
// a HostPaths root so tests can stage them. Missing files (a process that just exited) read as
// nullopt, never as an error.
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/diagnose/proc_source.hpp"
#include "gpufeed/probe/host_inspector.hpp"

namespace gpufeed {

class ProcReader final : public ProcSource {
 public:
  explicit ProcReader(HostPaths paths = {}) : paths_(std::move(paths)) {}

  std::optional<std::string> read(const std::string& absolute) const override;
  std::optional<std::string> readlink(const std::string& absolute) const override;

  bool alive(int pid) const override;
  std::optional<PidStat> pid_stat(int pid) const override;
  std::string cmdline(int pid) const override;            // joined with spaces
  std::vector<int> children_of(int pid) const override;   // descendants, from every /proc/N/stat ppid
  std::vector<PidStat> processes() const override;        // every process's /proc/N/stat
  std::optional<CpuList> allowed_cpus(int pid) const override;  // Cpus_allowed_list
  std::optional<int> current_syscall(int pid, int tid, std::optional<long>* first_arg = nullptr) const override;
  std::string fd_target(int pid, int fd) const override;  // readlink of /proc/PID/fd/FD ("pipe:[..]", a path)
  std::optional<ProcStat> stat() const override;
  std::optional<std::uint64_t> pressure_total_us(const std::string& resource) const override;  // cpu, io, memory
  std::optional<MemInfo> meminfo() const override;

 private:
  HostPaths paths_;
};

}  // namespace gpufeed
