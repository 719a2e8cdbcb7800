#pragma once
// Adapter: the diagnose session's ports on this machine - the eBPF tracer,
// /proc under a HostPaths root, the launched command, the GPU samplers,
// SIGINT/SIGTERM and CLOCK_MONOTONIC.
#include <memory>
#include <ostream>

#include "gpufeed/app/diagnose_session.hpp"
#include "gpufeed/probe/host_inspector.hpp"

namespace gpufeed {

std::unique_ptr<app::DiagnosePlatform> make_diagnose_platform(const HostPaths& host);

// After the report is out: waits for a launched command and returns its exit
// code (128 + signal when killed). Forwards a SIGTERM gpufeed received.
int wait_for_command(int pid, std::ostream& err, bool quiet = false);

}  // namespace gpufeed
