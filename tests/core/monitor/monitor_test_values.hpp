#pragma once
// Values the monitor core's tests build: a loop's poll, a finding, a GPU
// reading. Shared by the evidence window, finding log, GPU window and
// metrics tests.
#include <cstdint>
#include <string>

#include "syscall_nrs.h"
#include "gpufeed/diagnose/findings.hpp"
#include "gpufeed/diagnose/syscalls.hpp"
#include "gpufeed/gpu/sampler.hpp"

namespace gpufeed::testing {

inline SyscallStat loop_poll(double waited_s, std::uint64_t calls = 1) {
  SyscallStat s;
  s.nr = GF_NR_poll;
  s.role = Role::Loop;
  s.kind = CallKind::Pipe;
  s.hist.count = calls;
  s.hist.total_ns = static_cast<std::uint64_t>(waited_s * 1e9);
  return s;
}

inline Finding finding(const std::string& id, Severity s = Severity::Warning) {
  Finding f;
  f.id = id;
  f.severity = s;
  f.title = id + " title";
  f.advice = "do this";
  return f;
}

inline GpuSample reading(double t, int device, double busy, double power) {
  GpuSample s;
  s.t_s = t;
  s.device = device;
  s.busy_pct = busy;
  s.power_w = power;
  return s;
}

}  // namespace gpufeed::testing
