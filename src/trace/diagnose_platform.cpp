#include "gpufeed/trace/diagnose_platform.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "gpufeed/gpu/vendor_samplers.hpp"
#include "gpufeed/os/process_group.hpp"
#include "gpufeed/os/stop_signals.hpp"
#include "gpufeed/trace/bpf_tracer.hpp"
#include "gpufeed/trace/proc_reader.hpp"
#include "held_launch.hpp"
#include "path_resolver.hpp"

namespace gpufeed {
namespace {

class BpfSyscallTracer final : public app::SyscallTracer {
 public:
  explicit BpfSyscallTracer(const TracerSettings& settings) : tracer_(settings) {}
  void add_process(int tgid, bool worker, int rank) override { tracer_.add_process(tgid, worker, rank); }
  int poll(int timeout_ms, const std::function<void(const TraceEvent&)>& on_event) override {
    return tracer_.poll(timeout_ms, on_event);
  }
  std::vector<SyscallStat> histograms() const override { return tracer_.histograms(); }
  TracerCounters counters() const override { return tracer_.counters(); }

 private:
  BpfTracer tracer_;
};

class HeldCommand final : public app::LaunchedCommand {
 public:
  explicit HeldCommand(const std::vector<std::string>& command) : launch_(command) {}
  int pid() const override { return launch_.pid(); }
  void release() override { launch_.release(); }
  std::optional<int> try_wait() override {
    int status = 0;
    if (waitpid(launch_.pid(), &status, WNOHANG) == launch_.pid()) return os::exit_code_of(status);
    return std::nullopt;
  }

 private:
  Launch launch_;
};

class HostDiagnosePlatform final : public app::DiagnosePlatform {
 public:
  explicit HostDiagnosePlatform(const HostPaths& host)
      : view_(inspect_process(host, InspectOptions{false, false})), proc_(host), resolver_(proc_) {}

  const ProcSource& proc() override { return proc_; }
  app::HostCpus host_cpus() override { return {view_.usable_cpus(), view_.allowed_cpus}; }
  std::optional<std::string> tracing_unavailable() override { return BpfTracer::unavailable_reason(view_); }
  std::unique_ptr<app::SyscallTracer> open_tracer(const TracerSettings& settings) override {
    return std::make_unique<BpfSyscallTracer>(settings);
  }
  std::unique_ptr<app::LaunchedCommand> launch(const std::vector<std::string>& command) override {
    return std::make_unique<HeldCommand>(command);
  }
  SlowCall slow_call(const TraceEvent& event, double t_s) override { return resolver_.slow_call(event, t_s); }
  app::GpuSamplerOpen open_gpu_sampler(const std::string& backend) override {
    GpuOpenResult opened = gpufeed::open_gpu_sampler(backend);
    return {std::move(opened.sampler), std::move(opened.unavailable)};
  }
  void catch_stop_signals() override {
    if (!signals_) signals_.emplace();
  }
  bool stop_requested() override { return signals_ && signals_->last_signal() != 0; }
  std::uint64_t now_ns() override {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
  }
  void sleep_ms(int ms) override { usleep(static_cast<useconds_t>(ms) * 1000); }
  double clock_ticks_per_s() override { return static_cast<double>(sysconf(_SC_CLK_TCK)); }
  std::uint64_t page_bytes() override { return static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)); }

 private:
  ProcessView view_;
  ProcReader proc_;
  PathResolver resolver_;
  std::optional<os::StopOnSignal> signals_;
};

}  // namespace

std::unique_ptr<app::DiagnosePlatform> make_diagnose_platform(const HostPaths& host) {
  return std::make_unique<HostDiagnosePlatform>(host);
}

int wait_for_command(int pid, std::ostream& err, bool quiet) {
  int done = 0;
  if (waitpid(pid, &done, WNOHANG) == pid) return os::exit_code_of(done);
  if (!quiet) err << "gpufeed: report written; waiting for the command to exit\n";
  os::StopOnSignal signals;
  bool forwarded = false;
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, 0);
    if (r == pid) return os::exit_code_of(status);
    if (r < 0 && errno != EINTR) return 1;
    if (signals.last_signal() == SIGTERM && !forwarded) {
      err << "gpufeed: passing SIGTERM on to the command\n";
      kill(pid, SIGTERM);
      forwarded = true;
    }
  }
}

}  // namespace gpufeed
