#include "gpufeed/cpulist.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>

#include <fmt/format.h>

#include "gpufeed/error.hpp"

namespace gpufeed {
namespace {

int parse_cpu_number(std::string_view token, std::string_view whole) {
  int value = -1;
  const auto* end = token.data() + token.size();
  auto [ptr, ec] = std::from_chars(token.data(), end, value);
  if (ec != std::errc{} || ptr != end || value < 0) {
    throw usage_error(fmt::format("invalid CPU list '{}'", whole),
                      "write CPU numbers and ranges like 0-3,8,10-11");
  }
  return value;
}

}  // namespace

CpuList parse_cpulist(std::string_view text) {
  // Trailing newline as read from sysfs is fine; anything else is not.
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  CpuList cpus;
  std::string_view rest = text;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (comma != std::string_view::npos && rest.empty()) item = {};  // "1," is malformed
    auto dash = item.find('-');
    int first = parse_cpu_number(item.substr(0, dash), text);
    int last = dash == std::string_view::npos ? first : parse_cpu_number(item.substr(dash + 1), text);
    if (last < first || last - first > 1 << 20) {
      throw usage_error(fmt::format("invalid CPU range '{}' in '{}'", item, text),
                        "a range is FIRST-LAST with FIRST <= LAST");
    }
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string format_cpulist(const CpuList& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

CpuList intersect(const CpuList& a, const CpuList& b) {
  CpuList out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace gpufeed
