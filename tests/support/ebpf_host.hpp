#pragma once
// What the eBPF tests need to know of this host: whether they can run, and
// which BPF programs are loaded (a session that detached leaves none).
#include <optional>
#include <string>
#include <vector>

namespace gpufeed::testing {

// Names of loaded BPF programs that start with `prefix` (from bpftool),
// polling up to `settle_s` for the kernel to free programs of exited owners.
std::vector<std::string> loaded_bpf_programs(const std::string& prefix, double settle_s = 0);

// Why the eBPF system tests cannot run here, or nullopt.
std::optional<std::string> ebpf_unavailable_reason();

}  // namespace gpufeed::testing
