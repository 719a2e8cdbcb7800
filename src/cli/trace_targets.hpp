#pragma once
// `diagnose --pid` and `monitor --pid`: the option, and what may be traced,
// checked before any BPF program loads.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "gpufeed/probe/host_inspector.hpp"

namespace gpufeed::cli {

// --pid PID, repeatable (one per rank), checked as a process id.
CLI::Option* add_pid_option(CLI::App& cmd, std::vector<int>& pids, const std::string& help);

// Usage error (exit 2) for a kernel thread, gpufeed itself, or init (pid 1)
// without `force`; a process that does not exist is left to the session.
void check_trace_targets(const std::vector<int>& pids, bool force, const HostPaths& host);

}  // namespace gpufeed::cli
