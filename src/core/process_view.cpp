#include "gpufeed/process_view.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "gpufeed/error.hpp"
#include "gpufeed/setting.hpp"

namespace gpufeed {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The flag exists on probe alone; elsewhere the hint names no flag.
std::string ignore_cgroup_hint() {
  const auto flag = flag_for(Setting::ignore_cgroup);
  return flag ? "check the file, or pass " + *flag + " to probe without cgroup limits" : "check the file";
}

Error malformed(std::string_view source, std::string_view text, std::string_view expected) {
  return runtime_error(fmt::format("cannot parse {}: '{}' is not {}", source, trim(text), expected),
                       ignore_cgroup_hint());
}

template <typename T>
std::optional<T> to_number(std::string_view s) {
  T value{};
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// mountinfo escapes blanks in paths as octal (\040).
std::string unescape_octal(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      auto code = s.substr(i + 1, 3);
      if (code.size() == 3 && std::all_of(code.begin(), code.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out += static_cast<char>((code[0] - '0') * 64 + (code[1] - '0') * 8 + (code[2] - '0'));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

}  // namespace

int ProcessView::usable_cpus() const {
  int cpus = static_cast<int>(allowed_cpus.size());
  if (cgroup.cpu_quota_cores) {
    // A quota of 1.5 cores keeps at most two CPUs busy, each part of the time.
    cpus = std::min(cpus, std::max(1, static_cast<int>(std::ceil(*cgroup.cpu_quota_cores))));
  }
  return cpus;
}

std::optional<double> parse_cpu_max(std::string_view text, std::string_view source) {
  auto fields = split_ws(text);
  if (fields.empty() || fields.size() > 2) throw malformed(source, text, "'QUOTA PERIOD'");
  if (fields[0] == "max") return std::nullopt;
  auto quota = to_number<std::int64_t>(fields[0]);
  auto period = fields.size() == 2 ? to_number<std::int64_t>(fields[1]) : std::optional<std::int64_t>{100000};
  if (!quota || !period || *quota <= 0 || *period <= 0) throw malformed(source, text, "'QUOTA PERIOD'");
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

std::optional<double> parse_cfs_quota(std::string_view quota_text, std::string_view period_text,
                                      std::string_view source) {
  auto quota = to_number<std::int64_t>(trim(quota_text));
  auto period = to_number<std::int64_t>(trim(period_text));
  if (!quota || !period || *period <= 0) throw malformed(source, quota_text, "a CFS quota in microseconds");
  if (*quota < 0) return std::nullopt;
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

std::optional<std::uint64_t> parse_memory_max(std::string_view text, std::string_view source) {
  auto value = trim(text);
  if (value == "max") return std::nullopt;
  auto bytes = to_number<std::uint64_t>(value);
  if (!bytes) throw malformed(source, text, "a byte count or 'max'");
  // cgroup v1 reports "no limit" as the largest page-aligned signed value.
  if (*bytes >= (std::uint64_t{1} << 62)) return std::nullopt;
  return bytes;
}

std::uint64_t parse_cap_eff(std::string_view status, std::string_view source) {
  std::istringstream in{std::string(status)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      auto hex = trim(std::string_view(line).substr(7));
      std::uint64_t mask = 0;
      auto [ptr, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), mask, 16);
      if (ec != std::errc{} || ptr != hex.data() + hex.size()) break;
      return mask;
    }
  }
  throw runtime_error(fmt::format("cannot find a CapEff line in {}", source),
                      "gpufeed needs a Linux /proc to read its capabilities");
}

Privileges privileges_from(std::uint64_t cap_eff, unsigned euid) {
  // Bit numbers from linux/capability.h.
  constexpr int kCapSysAdmin = 21, kCapPerfmon = 38, kCapBpf = 39;
  auto has = [cap_eff](int bit) { return (cap_eff >> bit) & 1U; };
  Privileges p;
  p.root = euid == 0;
  p.cap_sys_admin = has(kCapSysAdmin);
  p.cap_perfmon = has(kCapPerfmon);
  p.cap_bpf = has(kCapBpf);
  return p;
}

std::vector<Mount> parse_mountinfo(std::string_view text) {
  // "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue"
  std::vector<Mount> mounts;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    auto fields = split_ws(line);
    auto dash = std::find(fields.begin(), fields.end(), std::string_view("-"));
    if (fields.size() < 5 || dash == fields.end() || std::distance(dash, fields.end()) < 3) continue;
    const std::string options = std::distance(dash, fields.end()) > 3 ? std::string(*(dash + 3)) : "";
    Mount m{unescape_octal(fields[4]), std::string(*(dash + 1)), unescape_octal(*(dash + 2)),
            unescape_octal(fields[3]), options};
    const auto dev = fields[2];  // "major:minor"
    const auto colon = dev.find(':');
    if (colon != std::string_view::npos) {
      m.dev_major = to_number<unsigned>(dev.substr(0, colon)).value_or(0);
      m.dev_minor = to_number<unsigned>(dev.substr(colon + 1)).value_or(0);
    }
    mounts.push_back(std::move(m));
  }
  return mounts;
}

CgroupMembership parse_proc_cgroup(std::string_view text) {
  // "0::/user.slice" (v2) and "4:memory:/docker/abc" (v1, maybe "cpu,cpuacct").
  CgroupMembership m;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    auto first = line.find(':');
    auto second = first == std::string::npos ? std::string::npos : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (line.compare(0, first, "0") == 0 && controllers.empty()) {
      m.v2_path = path;
      continue;
    }
    std::string_view rest = controllers;
    while (!rest.empty()) {
      auto comma = rest.find(',');
      m.v1.emplace_back(std::string(rest.substr(0, comma)), path);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  }
  return m;
}

}  // namespace gpufeed
