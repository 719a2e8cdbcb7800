#include "gpufeed/diagnose/proc_stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <sstream>

namespace gpufeed {
namespace {

template <typename T>
T num(std::string_view s, T fallback = 0) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} ? v : fallback;
}

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = line.find(' ', i);
    if (j == std::string_view::npos) j = line.size();
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

template <typename F>
void for_each_line(std::string_view text, F f) {
  while (!text.empty()) {
    auto nl = text.find('\n');
    f(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

}  // namespace

ProcStat parse_proc_stat(std::string_view text) {
  ProcStat s;
  for_each_line(text, [&](std::string_view line) {
    auto f = fields(line);
    if (f.empty()) return;
    if (f[0].rfind("cpu", 0) == 0 && f[0].size() > 3 && f.size() >= 9) {
      CpuTimes t;
      t.cpu = num<int>(f[0].substr(3), -1);
      t.user = num<std::uint64_t>(f[1]);
      t.nice = num<std::uint64_t>(f[2]);
      t.system = num<std::uint64_t>(f[3]);
      t.idle = num<std::uint64_t>(f[4]);
      t.iowait = num<std::uint64_t>(f[5]);
      t.irq = num<std::uint64_t>(f[6]);
      t.softirq = num<std::uint64_t>(f[7]);
      t.steal = num<std::uint64_t>(f[8]);
      s.cpus.push_back(t);
    } else if (f[0] == "ctxt" && f.size() >= 2) {
      s.ctxt = num<std::uint64_t>(f[1]);
    }
  });
  return s;
}

std::optional<PidStat> parse_pid_stat(std::string_view text) {
  // "pid (comm) S ppid ..." where comm may hold spaces and parentheses: it
  // ends at the last ')'.
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  PidStat p;
  p.pid = num<int>(text.substr(0, open > 0 ? open - 1 : 0));
  p.comm = std::string(text.substr(open + 1, close - open - 1));
  auto f = fields(text.substr(close + 1));
  // f[0] is field 3 (state); field N is f[N - 3].
  if (f.size() < 22 || f[0].empty()) return std::nullopt;
  p.state = f[0][0];
  p.ppid = num<int>(f[1]);
  p.pgrp = num<int>(f[2]);
  p.flags = num<std::uint64_t>(f[6]);
  p.utime = num<std::uint64_t>(f[11]);
  p.stime = num<std::uint64_t>(f[12]);
  p.threads = num<int>(f[17]);
  p.rss_pages = num<std::uint64_t>(f[21]);
  return p;
}

std::optional<std::string> trace_target_problem(const PidStat& stat, int self_pid, bool force) {
  const std::string name = fmt::format("process {} ({})", stat.pid, stat.comm);
  if (stat.kernel_thread()) return name + " is a kernel thread, not a training job";
  if (stat.pid == self_pid) return name + " is this gpufeed";
  if (stat.pid == 1 && !force) return name + " is init: tracing it follows every process of the system";
  return std::nullopt;
}

std::optional<std::uint64_t> parse_pressure_some_total(std::string_view text) {
  std::optional<std::uint64_t> total;
  for_each_line(text, [&](std::string_view line) {
    if (line.rfind("some ", 0) != 0) return;
    auto pos = line.find("total=");
    if (pos != std::string_view::npos) total = num<std::uint64_t>(line.substr(pos + 6));
  });
  return total;
}

MemInfo parse_meminfo(std::string_view text) {
  MemInfo m;
  for_each_line(text, [&](std::string_view line) {
    auto f = fields(line);
    if (f.size() < 2) return;
    const std::uint64_t bytes = num<std::uint64_t>(f[1]) * 1024;
    if (f[0] == "MemAvailable:") m.available_bytes = bytes;
    if (f[0] == "Cached:") m.cached_bytes = bytes;
    if (f[0] == "MemFree:") m.free_bytes = bytes;
  });
  return m;
}

std::optional<int> parse_proc_syscall(std::string_view text) {
  auto f = fields(text.substr(0, text.find('\n')));
  if (f.empty() || f[0] == "running") return std::nullopt;
  int nr = num<int>(f[0], -1);
  if (nr < 0) return std::nullopt;
  return nr;
}

CpuUse cpu_use(const ProcStat& before, const ProcStat& after, const std::vector<int>& cpus) {
  std::uint64_t total = 0, busy = 0, iowait = 0;
  for (const auto& a : after.cpus) {
    if (a.cpu < 0 || std::find(cpus.begin(), cpus.end(), a.cpu) == cpus.end()) continue;
    auto b = std::find_if(before.cpus.begin(), before.cpus.end(), [&](const CpuTimes& t) { return t.cpu == a.cpu; });
    if (b == before.cpus.end() || a.total() < b->total()) continue;
    total += a.total() - b->total();
    busy += a.busy() - std::min(a.busy(), b->busy());
    iowait += a.iowait - std::min(a.iowait, b->iowait);
  }
  if (total == 0) return {};
  return {100.0 * static_cast<double>(busy) / static_cast<double>(total),
          100.0 * static_cast<double>(iowait) / static_cast<double>(total)};
}

}  // namespace gpufeed
