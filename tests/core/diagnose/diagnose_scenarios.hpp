#pragma once
// Hand-built evidence for the rule tests: each function describes one
// situation a real job can be in, with round numbers.
#include "gpufeed/diagnose/evidence.hpp"

namespace gpufeed::testing {

// Syscall numbers (x86_64) used below.
inline constexpr int kRead = 0, kClose = 3, kPoll = 7, kFutex = 202, kOpenat = 257, kNewfstatat = 262;

inline SyscallStat stat_of(int nr, Role role, CallKind kind, std::uint64_t count, double each_ms,
                           std::uint64_t bytes = 0) {
  SyscallStat s{nr, role, kind, {}};
  for (std::uint64_t i = 0; i < count; ++i) s.hist.add(static_cast<std::uint64_t>(each_ms * 1e6));
  s.hist.bytes = bytes;
  return s;
}

inline ProcessInfo process(int pid, bool worker, double cpu_s, double window_s, char state = 'S') {
  ProcessInfo p;
  p.pid = pid;
  p.worker = worker;
  p.cpu_s = cpu_s;
  p.first_seen_s = 0;
  p.last_seen_s = window_s;
  p.states[state] = 50;
  return p;
}

inline void add_slow_path_calls(Evidence& e, int nr, int n, double ms, const std::string& mount,
                                const std::string& fs) {
  for (int i = 0; i < n; ++i) {
    SlowCall c;
    c.t_s = i * 0.01;
    c.dur_ms = ms * (0.8 + 0.4 * (i % 10) / 9.0);  // spread around `ms`
    c.pid = 101;
    c.role = Role::Worker;
    c.nr = nr;
    c.kind = CallKind::Path;
    c.path = mount + "/train/class_01/img_" + std::to_string(i) + ".jpg";
    c.mount_point = mount;
    c.fs_type = fs;
    e.slow_calls.push_back(c);
  }
}

inline void add_waits(Evidence& e, int n, double ms) {
  for (int i = 0; i < n; ++i) e.waits.push_back({1.0 + i * 0.05, ms, 100, 0, kPoll});
}

// The incident: two workers read 50 KB files from a FUSE mount whose stat
// and open take ~20-25 ms; the loop waits 70% of the time.
// Ten seconds of eBPF tracing on a host of `cpus` usable CPUs, `busy_pct` busy.
inline Evidence traced_10s(int cpus, double busy_pct) {
  Evidence e;
  e.window_s = 10;
  e.ebpf = true;
  e.host.usable_cpus = cpus;
  e.host.cpu_busy_pct = busy_pct;
  return e;
}

inline Evidence starved_on_fuse() {
  Evidence e = traced_10s(8, 12);
  e.syscalls.push_back(stat_of(kPoll, Role::Loop, CallKind::None, 140, 50));  // 7 s waiting
  e.syscalls.push_back(stat_of(kNewfstatat, Role::Worker, CallKind::Path, 400, 20));
  e.syscalls.push_back(stat_of(kOpenat, Role::Worker, CallKind::Path, 400, 25));
  e.syscalls.push_back(stat_of(kRead, Role::Worker, CallKind::File, 800, 1, 400 * 50 * 1024));
  e.syscalls.push_back(stat_of(kPoll, Role::Worker, CallKind::None, 10, 10));  // 0.1 s idle
  add_slow_path_calls(e, kNewfstatat, 400, 20, "/mnt/s3", "fuse.s3fs");
  add_slow_path_calls(e, kOpenat, 400, 25, "/mnt/s3", "fuse.s3fs");
  add_waits(e, 140, 50);
  e.processes = {process(100, false, 3, 10), process(101, true, 1, 10), process(102, true, 1, 10)};
  return e;
}

// A well-fed job on local disk: the loop waits 2%, the workers idle half the time.
inline Evidence healthy_local() {
  Evidence e = traced_10s(8, 40);
  e.syscalls.push_back(stat_of(kPoll, Role::Loop, CallKind::None, 200, 1));  // 0.2 s
  e.syscalls.push_back(stat_of(kNewfstatat, Role::Worker, CallKind::Path, 4000, 0.01));
  e.syscalls.push_back(stat_of(kOpenat, Role::Worker, CallKind::Path, 4000, 0.02));
  e.syscalls.push_back(stat_of(kRead, Role::Worker, CallKind::File, 8000, 0.05, 4000ULL * 110 * 1024));
  e.syscalls.push_back(stat_of(kPoll, Role::Worker, CallKind::None, 400, 50));  // 20 s of 40 s idle
  add_waits(e, 5, 1);
  e.processes = {process(100, false, 6, 10)};
  for (int i = 0; i < 4; ++i) e.processes.push_back(process(101 + i, true, 4, 10));
  return e;
}

// Decode-heavy workers: on CPU nearly all their busy time, every core busy.
inline Evidence cpu_bound() {
  Evidence e = traced_10s(4, 97);
  e.syscalls.push_back(stat_of(kPoll, Role::Loop, CallKind::None, 80, 50));  // 4 s
  e.syscalls.push_back(stat_of(kOpenat, Role::Worker, CallKind::Path, 1000, 0.02));
  e.syscalls.push_back(stat_of(kRead, Role::Worker, CallKind::File, 2000, 0.05, 1000ULL * 110 * 1024));
  add_waits(e, 80, 50);
  e.processes = {process(100, false, 5, 10)};
  for (int i = 0; i < 4; ++i) e.processes.push_back(process(101 + i, true, 9.5, 10, 'R'));
  return e;
}

// The s3fs case: the incident's starving job, but on 2 cores that
// its workers share with the FUSE daemon (and the S3 server behind it).
// The workers sleep in FUSE calls; the CPU goes to the daemon: 2 cores 95%
// busy, tasks waiting for a CPU 62% of the time, 19 CPU-s of 10 s x 2 cores
// busy of which the job spends 7.
inline Evidence starved_on_saturated_fuse() {
  Evidence e = starved_on_fuse();
  e.host.usable_cpus = 2;
  e.host.cpu_busy_pct = 95;
  e.host.psi_cpu_some_pct = 62;
  for (int i = 0; i < 4; ++i) e.processes.push_back(process(103 + i, true, 0.5, 10));
  return e;
}

// Enough supply on average, but waits come in rare long bursts.
inline Evidence bursty() {
  Evidence e = traced_10s(8, 30);
  e.syscalls.push_back(stat_of(kPoll, Role::Loop, CallKind::None, 100, 15));  // 1.5 s = 15%
  e.syscalls.push_back(stat_of(kPoll, Role::Worker, CallKind::None, 400, 50));  // workers idle half
  for (int i = 0; i < 90; ++i) e.waits.push_back({1.0 + i * 0.1, 1.0, 100, 0, kPoll});
  for (int i = 0; i < 10; ++i) e.waits.push_back({2.0 + i, 140.0, 100, 0, kPoll});
  e.processes = {process(100, false, 6, 10)};
  for (int i = 0; i < 4; ++i) e.processes.push_back(process(101 + i, true, 3, 10));
  return e;
}

}  // namespace gpufeed::testing
