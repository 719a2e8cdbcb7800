#pragma once
// Parsers for the /proc files diagnose samples, and the arithmetic over two
// samples. Pure: tested on captured text.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpufeed {

struct CpuTimes {  // jiffies from one "cpuN" line of /proc/stat
  int cpu = -1;    // -1 for the "cpu" total line
  std::uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  std::uint64_t total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
  std::uint64_t busy() const { return total() - idle - iowait; }
};

struct ProcStat {
  std::vector<CpuTimes> cpus;  // per CPU, in file order
  std::uint64_t ctxt = 0;
};
ProcStat parse_proc_stat(std::string_view text);

struct PidStat {
  int pid = 0;
  std::string comm;
  char state = '?';
  int ppid = 0;
  int pgrp = 0;  // process group
  std::uint64_t utime = 0, stime = 0;  // clock ticks
  std::uint64_t rss_pages = 0;
  int threads = 0;
  std::uint64_t flags = 0;  // PF_* (field 9)
  bool kernel_thread() const { return (flags & 0x00200000U) != 0; }  // PF_KTHREAD
};
// /proc/PID/stat; nullopt when malformed (the process may be exiting).
std::optional<PidStat> parse_pid_stat(std::string_view text);

// Why `stat` is no job to trace (a kernel thread, init without `force`,
// gpufeed itself), naming it; nullopt when it is fine.
std::optional<std::string> trace_target_problem(const PidStat& stat, int self_pid, bool force);

// "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345" -> total (us), the
// cumulative stall time; nullopt when the line is missing.
std::optional<std::uint64_t> parse_pressure_some_total(std::string_view text);

struct MemInfo {
  std::uint64_t available_bytes = 0;
  std::uint64_t cached_bytes = 0;
  std::uint64_t free_bytes = 0;
};
MemInfo parse_meminfo(std::string_view text);

// /proc/PID/syscall: "running", "-1 ..." (not in a call), or "NR args...".
// Returns the syscall number when blocked in one.
std::optional<int> parse_proc_syscall(std::string_view text);

// Busy and iowait percentage of `cpus` (OS numbers) between two samples.
struct CpuUse {
  double busy_pct = 0;
  double iowait_pct = 0;
};
CpuUse cpu_use(const ProcStat& before, const ProcStat& after, const std::vector<int>& cpus);

}  // namespace gpufeed
