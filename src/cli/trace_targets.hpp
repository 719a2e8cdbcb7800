#pragma once
// `diagnose --pid`: what may be traced, checked before any BPF program loads.
#include <vector>

#include "gpufeed/probe/host_inspector.hpp"

namespace gpufeed::cli {

// Usage error (exit 2) for a kernel thread, gpufeed itself, or init (pid 1)
// without `force`; a process that does not exist is left to the session.
void check_trace_targets(const std::vector<int>& pids, bool force, const HostPaths& host);

}  // namespace gpufeed::cli
