#pragma once
// Port: the /proc reads a session makes. The adapter (trace/proc_reader.hpp)
// reads the real files under a HostPaths root; unit tests give a fake.
// Missing files (a process that just exited) read as nullopt or empty,
// never as an error.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/cpulist.hpp"
#include "gpufeed/diagnose/proc_stats.hpp"

namespace gpufeed {

class ProcSource {
 public:
  virtual ~ProcSource() = default;
  virtual std::optional<std::string> read(const std::string& absolute) const = 0;
  virtual std::optional<std::string> readlink(const std::string& absolute) const = 0;

  virtual bool alive(int pid) const = 0;
  virtual std::optional<PidStat> pid_stat(int pid) const = 0;
  virtual std::string cmdline(int pid) const = 0;            // joined with spaces
  virtual std::vector<int> children_of(int pid) const = 0;   // descendants
  virtual std::vector<PidStat> processes() const = 0;        // every process's /proc/N/stat
  virtual std::optional<CpuList> allowed_cpus(int pid) const = 0;  // Cpus_allowed_list
  virtual std::optional<int> current_syscall(int pid, int tid, std::optional<long>* first_arg = nullptr) const = 0;
  virtual std::string fd_target(int pid, int fd) const = 0;  // "pipe:[..]", a path
  virtual std::optional<ProcStat> stat() const = 0;
  virtual std::optional<std::uint64_t> pressure_total_us(const std::string& resource) const = 0;  // cpu, io, memory
  virtual std::optional<MemInfo> meminfo() const = 0;
};

// Checks the processes a user named as ranks (--pid): each one running,
// none twice. Throws usage_error naming the PID; diagnose and monitor share it.
void require_target_pids(const ProcSource& proc, const std::vector<int>& pids);

}  // namespace gpufeed
