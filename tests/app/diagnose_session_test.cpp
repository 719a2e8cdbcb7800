// `gpufeed diagnose`'s session on fakes of its ports: a scripted tracer, a
// /proc that exists only in memory, a command that is never run, and a clock
// that moves only when the session waits. This suite links the app and core
// libraries only, so an adapter creeping into the session fails to link.
#include "gpufeed/app/diagnose_session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <sstream>

#include "gpufeed/error.hpp"

namespace gpufeed::app {
namespace {

constexpr std::uint64_t kMs = 1000000ULL;
constexpr std::uint64_t kStart = 5000 * kMs;  // the fake clock's first reading

// What the fakes saw, in order: the session's calls to the machine.
using Log = std::vector<std::string>;

bool logged_before(const Log& log, const std::string& first, const std::string& then) {
  auto a = std::find(log.begin(), log.end(), first);
  auto b = std::find(log.begin(), log.end(), then);
  return a != log.end() && b != log.end() && a < b;
}

class FakeProc final : public ProcSource {
 public:
  explicit FakeProc(const std::atomic<std::uint64_t>& now) : now_(now) {}
  std::map<int, PidStat> pids;
  std::map<int, std::uint64_t> exits_at;  // pid -> clock reading from which it is gone
  std::map<int, std::vector<int>> children;

  bool gone(int pid) const {
    auto it = exits_at.find(pid);
    return !pids.count(pid) || (it != exits_at.end() && now_ >= it->second);
  }
  std::optional<std::string> read(const std::string& path) const override {
    if (path.find("/environ") != std::string::npos) return std::string("CUDA_VISIBLE_DEVICES=1\0", 23);
    return std::nullopt;
  }
  std::optional<std::string> readlink(const std::string&) const override { return std::nullopt; }
  bool alive(int pid) const override { return !gone(pid); }
  std::optional<PidStat> pid_stat(int pid) const override {
    if (gone(pid)) return std::nullopt;
    PidStat s = pids.at(pid);
    s.utime += (now_ - kStart) / (10 * kMs) / 2;  // half a core, in 100 Hz ticks
    return s;
  }
  std::string cmdline(int pid) const override { return "python train.py # " + std::to_string(pid); }
  std::vector<int> children_of(int pid) const override {
    auto it = children.find(pid);
    return it == children.end() ? std::vector<int>{} : it->second;
  }
  std::vector<PidStat> processes() const override { return {}; }
  std::optional<CpuList> allowed_cpus(int) const override { return CpuList{0, 1}; }
  std::optional<int> current_syscall(int, int, std::optional<long>*) const override { return std::nullopt; }
  std::string fd_target(int, int) const override { return ""; }
  std::optional<ProcStat> stat() const override {
    ProcStat st;
    const std::uint64_t ticks = (now_ - kStart) / (10 * kMs);
    for (int cpu = 0; cpu < 2; ++cpu) {
      CpuTimes t;
      t.cpu = cpu;
      t.user = ticks / 2;
      t.idle = ticks / 4;
      t.iowait = ticks - ticks / 2 - ticks / 4;
      st.cpus.push_back(t);
    }
    st.ctxt = ticks * 100;
    return st;
  }
  std::optional<std::uint64_t> pressure_total_us(const std::string&) const override { return std::nullopt; }
  std::optional<MemInfo> meminfo() const override { return MemInfo{}; }

 private:
  const std::atomic<std::uint64_t>& now_;
};

// Delivers its script's events once the clock has passed their start; each
// poll moves the clock by its timeout, as a real wait would.
class FakeTracer final : public SyscallTracer {
 public:
  FakeTracer(std::atomic<std::uint64_t>& now, std::vector<TraceEvent> script, Log& log)
      : now_(now), script_(std::move(script)), log_(log) {}
  ~FakeTracer() override { log_.push_back("tracer detached"); }
  void add_process(int tgid, bool worker, int rank) override {
    log_.push_back("trace " + std::to_string(tgid) + (worker ? " worker" : "") + " rank " + std::to_string(rank));
  }
  int poll(int timeout_ms, const std::function<void(const TraceEvent&)>& on_event) override {
    now_ += static_cast<std::uint64_t>(timeout_ms) * kMs;
    int n = 0;
    while (next_ < script_.size() && script_[next_].start_ns + script_[next_].dur_ns <= now_) {
      on_event(script_[next_++]);
      ++n;
    }
    return n;
  }
  std::vector<SyscallStat> histograms() const override { return {}; }
  TracerCounters counters() const override { return {}; }

 private:
  std::atomic<std::uint64_t>& now_;
  std::vector<TraceEvent> script_;
  size_t next_ = 0;
  Log& log_;
};

class FakeCommand final : public LaunchedCommand {
 public:
  FakeCommand(int pid, std::optional<int> exit_code, std::uint64_t exits_at, const std::atomic<std::uint64_t>& now, Log& log,
              bool exec_fails)
      : pid_(pid), exit_code_(exit_code), exits_at_(exits_at), now_(now), log_(log), exec_fails_(exec_fails) {}
  int pid() const override { return pid_; }
  void release() override {
    log_.push_back("release");
    if (exec_fails_) throw usage_error("cannot run 'nope': No such file or directory", "check the command");
  }
  std::optional<int> try_wait() override {
    if (exit_code_ && now_ >= exits_at_) return exit_code_;
    return std::nullopt;
  }

 private:
  int pid_;
  std::optional<int> exit_code_;
  std::uint64_t exits_at_;
  const std::atomic<std::uint64_t>& now_;
  Log& log_;
  bool exec_fails_;
};

class FakeGpu final : public GpuSampler {
 public:
  explicit FakeGpu(Log& log) : log_(log) {}
  std::string backend() const override { return "fake"; }
  std::vector<GpuDevice> devices() const override {
    GpuDevice d;
    d.index = 0;
    GpuDevice e;
    e.index = 1;
    return {d, e};
  }
  std::vector<GpuSample> sample(double t_s) override {
    std::vector<GpuSample> out;
    for (int i = 0; i < 2; ++i) {
      GpuSample s;
      s.t_s = t_s;
      s.device = i;
      s.busy_pct = 40;
      out.push_back(s);
    }
    return out;
  }
  std::vector<GpuProcess> processes(int device) override {
    log_.push_back("gpu processes " + std::to_string(device));
    return {};
  }

 private:
  Log& log_;
};

class FakePlatform final : public DiagnosePlatform {
 public:
  std::atomic<std::uint64_t> now{kStart};  // read by the GPU sampling thread too
  FakeProc fake_proc{now};
  Log log;
  std::optional<std::string> unavailable;     // eBPF cannot run, because
  std::optional<std::string> open_fails;      // opening the tracer throws this
  std::vector<TraceEvent> events;             // the tracer's script
  std::optional<std::uint64_t> stop_at;       // a Ctrl-C at this clock reading
  bool gpu = false;
  // The launched command: its pid, and its exit code from a clock reading.
  int command_pid = 777;
  std::optional<int> command_exit;
  std::uint64_t command_exits_at = 0;
  bool exec_fails = false;

  const ProcSource& proc() override { return fake_proc; }
  HostCpus host_cpus() override { return {2, {0, 1}}; }
  std::optional<std::string> tracing_unavailable() override { return unavailable; }
  std::unique_ptr<SyscallTracer> open_tracer(const TracerSettings&) override {
    log.push_back("open tracer");
    if (open_fails) throw Error(ErrorKind::Privilege, *open_fails, "run as root");
    return std::make_unique<FakeTracer>(now, events, log);
  }
  std::unique_ptr<LaunchedCommand> launch(const std::vector<std::string>& command) override {
    log.push_back("launch " + command.front());
    PidStat s;
    s.pid = command_pid;
    s.comm = "python";
    s.state = 'R';
    fake_proc.pids[command_pid] = s;
    if (command_exit) fake_proc.exits_at[command_pid] = command_exits_at;
    return std::make_unique<FakeCommand>(command_pid, command_exit, command_exits_at, now, log, exec_fails);
  }
  SlowCall slow_call(const TraceEvent& ev, double t_s) override {
    SlowCall c;  // the fields the tests read
    c.t_s = t_s;
    c.dur_ms = static_cast<double>(ev.dur_ns) / 1e6;
    c.path = "/data/" + ev.path;
    return c;
  }
  GpuSamplerOpen open_gpu_sampler(const std::string& backend) override {
    log.push_back("open gpu " + backend);
    if (!gpu) return {nullptr, "no GPU here"};
    return {std::make_unique<FakeGpu>(log), ""};
  }
  void catch_stop_signals() override { log.push_back("catch signals"); }
  bool stop_requested() override { return stop_at && now >= *stop_at; }
  std::uint64_t now_ns() override { return now; }
  void sleep_ms(int ms) override { now += static_cast<std::uint64_t>(ms) * kMs; }
  double clock_ticks_per_s() override { return 100; }
  std::uint64_t page_bytes() override { return 4096; }

  void add_process(int pid, int ppid = 1) {
    PidStat s;
    s.pid = pid;
    s.ppid = ppid;
    s.comm = "python";
    s.state = 'S';
    fake_proc.pids[pid] = s;
  }
};

TraceEvent event(TraceEventType type, int tgid, std::uint64_t at_ms, std::uint64_t dur_ms = 0) {
  TraceEvent e;
  e.type = type;
  e.tgid = e.tid = tgid;
  e.start_ns = kStart + at_ms * kMs;
  e.dur_ns = dur_ms * kMs;
  return e;
}

struct Window {
  FakePlatform platform;
  DiagnoseRequest request;
  std::ostringstream err;

  Window() {
    request.duration_s = 2;
    request.gpu = "none";
  }
  DiagnoseOutcome go() {
    DiagnoseIo io{err, false, false};
    return run_diagnose_session(request, platform, io);
  }
};

TEST(AppDiagnoseSession, AttachesToTheRankAndItsWorkersAndTracesForTheWholeWindow) {
  Window r;
  r.platform.add_process(100);
  r.platform.add_process(101, 100);
  r.platform.fake_proc.children[100] = {101};
  r.request.pids = {100};
  TraceEvent slow = event(TraceEventType::SlowCall, 101, 300, 45);
  slow.path = "img0.jpg";
  TraceEvent fork = event(TraceEventType::Fork, 100, 400);
  fork.other_pid = 102;
  r.platform.add_process(102, 100);
  r.platform.events = {slow, fork, event(TraceEventType::Wait, 100, 500, 200)};

  const DiagnoseOutcome out = r.go();

  EXPECT_EQ(out.report.end_reason, "duration");
  EXPECT_FALSE(out.interrupted);
  EXPECT_NEAR(out.report.evidence.window_s, 2.0, 0.15);
  EXPECT_TRUE(out.report.evidence.ebpf);
  ASSERT_EQ(out.report.evidence.slow_calls.size(), 1u);
  EXPECT_EQ(out.report.evidence.slow_calls[0].path, "/data/img0.jpg");
  EXPECT_NEAR(out.report.evidence.slow_calls[0].dur_ms, 45, 1e-9);
  ASSERT_EQ(out.report.evidence.waits.size(), 1u);
  EXPECT_NEAR(out.report.evidence.waits[0].dur_ms, 200, 1e-9);
  // The rank, the worker that existed, and the one forked in the window.
  std::set<int> seen;
  for (const auto& p : out.report.evidence.processes) seen.insert(p.pid);
  EXPECT_EQ(seen, (std::set<int>{100, 101, 102}));
  // Traced before the window opened: the tracer, then the rank and its worker.
  EXPECT_TRUE(logged_before(r.platform.log, "open tracer", "trace 100 rank 0"));
  EXPECT_TRUE(logged_before(r.platform.log, "trace 100 rank 0", "trace 101 worker rank 0"));
  EXPECT_NE(r.err.str().find("tracing pid 100 and its workers"), std::string::npos) << r.err.str();
}

TEST(AppDiagnoseSession, CtrlCEndsTheWindowAndStillReports) {
  Window r;
  r.platform.add_process(100);
  r.request.pids = {100};
  r.request.duration_s = 30;
  r.platform.stop_at = kStart + 1200 * kMs;
  TraceEvent slow = event(TraceEventType::SlowCall, 100, 300, 45);
  r.platform.events = {slow};

  const DiagnoseOutcome out = r.go();

  EXPECT_TRUE(out.interrupted);
  EXPECT_EQ(out.report.end_reason, "interrupted");
  EXPECT_NEAR(out.report.evidence.window_s, 1.2, 0.15);
  EXPECT_EQ(out.report.evidence.slow_calls.size(), 1u);
  EXPECT_TRUE(logged_before(r.platform.log, "open tracer", "catch signals"));
  EXPECT_EQ(r.platform.log.back(), "tracer detached");
}

TEST(AppDiagnoseSession, TheJobExitingEndsTheWindow) {
  Window r;
  r.platform.add_process(100);
  r.platform.fake_proc.exits_at[100] = kStart + 700 * kMs;
  r.request.pids = {100};
  r.request.duration_s = 30;

  const DiagnoseOutcome out = r.go();

  EXPECT_EQ(out.report.end_reason, "target exited");
  EXPECT_LT(out.report.evidence.window_s, 1.0);
  ASSERT_EQ(out.report.evidence.processes.size(), 1u);
  EXPECT_TRUE(out.report.evidence.processes[0].exited);
}

TEST(AppDiagnoseSession, ALaunchedCommandIsTracedBeforeItRunsAndItsExitCodeKept) {
  Window r;
  r.request.command = {"python", "train.py"};
  r.request.duration_s = 30;
  r.platform.command_exit = 3;
  r.platform.command_exits_at = kStart + 900 * kMs;

  const DiagnoseOutcome out = r.go();

  EXPECT_TRUE(logged_before(r.platform.log, "trace 777 rank 0", "release"));
  EXPECT_EQ(out.report.end_reason, "target exited");
  ASSERT_TRUE(out.command_status);
  EXPECT_EQ(*out.command_status, 3);
  EXPECT_EQ(out.report.command_exit_code, std::optional<int>(3));
  EXPECT_TRUE(out.report.launched);
  EXPECT_EQ(out.launched_pid, 0);  // reaped: nothing left to wait for
  ASSERT_EQ(out.report.targets.size(), 1u);
  EXPECT_EQ(out.report.targets[0].command, "python train.py");
}

TEST(AppDiagnoseSession, ACommandStillRunningAtTheDeadlineIsLeftToBeWaitedFor) {
  Window r;
  r.request.command = {"python", "train.py"};

  const DiagnoseOutcome out = r.go();

  EXPECT_EQ(out.report.end_reason, "duration");
  EXPECT_FALSE(out.command_status);
  EXPECT_EQ(out.launched_pid, 777);
}

TEST(AppDiagnoseSession, ACommandThatCannotRunIsAUsageErrorAndTheTracerIsDetached) {
  Window r;
  r.request.command = {"nope"};
  r.platform.exec_fails = true;
  try {
    r.go();
    FAIL() << "expected a usage error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
  }
  EXPECT_EQ(r.platform.log.back(), "tracer detached");
}

TEST(AppDiagnoseSession, WithoutEbpfItSamplesProcAndSaysWhy) {
  Window r;
  r.platform.add_process(100);
  r.request.pids = {100};
  r.platform.unavailable = "no CAP_BPF";

  const DiagnoseOutcome out = r.go();

  EXPECT_FALSE(out.report.evidence.ebpf);
  EXPECT_EQ(out.report.evidence.ebpf_unavailable, "no CAP_BPF");
  EXPECT_EQ(std::count(r.platform.log.begin(), r.platform.log.end(), "open tracer"), 0);
  EXPECT_NE(r.err.str().find("eBPF tracing is not available (no CAP_BPF)"), std::string::npos) << r.err.str();
  EXPECT_GT(out.report.evidence.host.samples, 10);  // /proc at 10 Hz for 2 s
}

TEST(AppDiagnoseSession, ATracerThatFailsToLoadFallsBackUnlessEbpfIsRequired) {
  Window r;
  r.platform.add_process(100);
  r.request.pids = {100};
  r.platform.open_fails = "the BPF verifier rejected the program";
  EXPECT_EQ(r.go().report.evidence.ebpf_unavailable, "the BPF verifier rejected the program");

  Window required;
  required.platform.add_process(100);
  required.request.pids = {100};
  required.request.ebpf = EbpfMode::Required;
  required.platform.unavailable = "no BTF";
  try {
    required.go();
    FAIL() << "expected a privilege error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Privilege);
    EXPECT_NE(std::string(e.what()).find("no BTF"), std::string::npos);
  }
  EXPECT_EQ(std::count(required.platform.log.begin(), required.platform.log.end(), "catch signals"), 0);
}

TEST(AppDiagnoseSession, TheTracerIsDetachedBeforeTheGpusAreAskedWhoseJobItIs) {
  Window r;
  r.platform.add_process(100);
  r.request.pids = {100};
  r.request.gpu = "auto";
  r.platform.gpu = true;

  const DiagnoseOutcome out = r.go();

  EXPECT_TRUE(logged_before(r.platform.log, "tracer detached", "gpu processes 0"));
  ASSERT_TRUE(out.report.evidence.gpu);
  // No GPU process list names the job: its CUDA_VISIBLE_DEVICES does.
  EXPECT_EQ(out.report.evidence.gpu->job_devices, std::vector<int>{1});
  EXPECT_EQ(out.report.evidence.gpu->job_devices_from, "CUDA_VISIBLE_DEVICES");
}

TEST(AppDiagnoseSession, BadTargetsAreUsageErrorsBeforeAnythingIsTraced) {
  auto fails = [](Window& r) {
    try {
      r.go();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Usage);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Window neither;
  EXPECT_NE(fails(neither).find("give either"), std::string::npos);
  Window gone;
  gone.request.pids = {4242};
  EXPECT_NE(fails(gone).find("process 4242 does not exist"), std::string::npos);
  Window twice;
  twice.platform.add_process(100);
  twice.request.pids = {100, 100};
  EXPECT_NE(fails(twice).find("given twice"), std::string::npos);
  for (Window* r : {&neither, &gone, &twice}) {
    EXPECT_EQ(std::count(r->platform.log.begin(), r->platform.log.end(), "open tracer"), 0);
  }
}

}  // namespace
}  // namespace gpufeed::app
