#include "gpufeed/trace/proc_reader.hpp"

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

namespace gpufeed {

std::optional<std::string> ProcReader::read(const std::string& absolute) const {
  std::ifstream in(paths_(absolute));
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<std::string> ProcReader::readlink(const std::string& absolute) const {
  char buf[PATH_MAX];
  const auto path = paths_(absolute);
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  if (n < 0) return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

bool ProcReader::alive(int pid) const {
  auto s = pid_stat(pid);
  return s && s->state != 'Z' && s->state != 'X';
}

std::optional<PidStat> ProcReader::pid_stat(int pid) const {
  auto text = read(fmt::format("/proc/{}/stat", pid));
  return text ? parse_pid_stat(*text) : std::nullopt;
}

std::string ProcReader::cmdline(int pid) const {
  auto text = read(fmt::format("/proc/{}/cmdline", pid)).value_or("");
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text) {
    if (c == '\0') c = ' ';
  }
  return text;
}

std::vector<int> ProcReader::children_of(int root) const {
  std::map<int, std::vector<int>> kids;
  for (const PidStat& s : processes()) kids[s.ppid].push_back(s.pid);
  std::vector<int> out, todo{root};
  while (!todo.empty()) {
    int p = todo.back();
    todo.pop_back();
    for (int c : kids[p]) {
      out.push_back(c);
      todo.push_back(c);
    }
  }
  return out;
}

std::vector<PidStat> ProcReader::processes() const {
  std::vector<PidStat> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(paths_("/proc"), ec)) {
    const auto name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (auto s = pid_stat(std::stoi(name))) out.push_back(std::move(*s));
  }
  return out;
}

std::optional<CpuList> ProcReader::allowed_cpus(int pid) const {
  auto text = read(fmt::format("/proc/{}/status", pid));
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Cpus_allowed_list:", 0) == 0) {
      try {
        return parse_cpulist(line.substr(line.find(':') + 1));
      } catch (...) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

std::optional<int> ProcReader::current_syscall(int pid, int tid, std::optional<long>* first_arg) const {
  auto text = read(fmt::format("/proc/{}/task/{}/syscall", pid, tid));
  if (!text) return std::nullopt;
  auto nr = parse_proc_syscall(*text);
  if (nr && first_arg) {
    std::istringstream in(*text);
    std::string n, a0;
    in >> n >> a0;
    try {
      *first_arg = std::stol(a0, nullptr, 16);
    } catch (...) {
      first_arg->reset();
    }
  }
  return nr;
}

std::string ProcReader::fd_target(int pid, int fd) const {
  return readlink(fmt::format("/proc/{}/fd/{}", pid, fd)).value_or("");
}

std::optional<ProcStat> ProcReader::stat() const {
  auto text = read("/proc/stat");
  return text ? std::optional<ProcStat>(parse_proc_stat(*text)) : std::nullopt;
}

std::optional<std::uint64_t> ProcReader::pressure_total_us(const std::string& resource) const {
  auto text = read("/proc/pressure/" + resource);
  return text ? parse_pressure_some_total(*text) : std::nullopt;
}

std::optional<MemInfo> ProcReader::meminfo() const {
  auto text = read("/proc/meminfo");
  return text ? std::optional<MemInfo>(parse_meminfo(*text)) : std::nullopt;
}

}  // namespace gpufeed
