#include "support/ebpf_host.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

namespace gpufeed::testing {
namespace {

std::string run_capture(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  if (!pipe) return out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  return out;
}

}  // namespace

std::vector<std::string> loaded_bpf_programs(const std::string& prefix, double settle_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(settle_s);
  for (;;) {
    std::vector<std::string> names;
    const std::string out = run_capture("bpftool prog list 2>/dev/null");
    size_t pos = 0;
    while ((pos = out.find(" name ", pos)) != std::string::npos) {
      pos += 6;
      const std::string name = out.substr(pos, out.find_first_of(" \n", pos) - pos);
      if (name.rfind(prefix, 0) == 0) names.push_back(name);
    }
    if (names.empty() || std::chrono::steady_clock::now() > end) return names;
    // Programs of an exited process are freed after an RCU grace period.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::optional<std::string> ebpf_unavailable_reason() {
  if (geteuid() != 0) return "needs root for eBPF (run the tests as root)";
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) return "the kernel has no BTF (/sys/kernel/btf/vmlinux)";
  if (run_capture("command -v bpftool || ls /usr/sbin/bpftool 2>/dev/null").empty()) return "bpftool is not installed";
  return std::nullopt;
}

}  // namespace gpufeed::testing
