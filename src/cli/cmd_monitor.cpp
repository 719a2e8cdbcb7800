// `gpufeed monitor`: options -> MonitorRequest -> one long session.
#include <fmt/format.h>

#include "context.hpp"
#include "option_values.hpp"
#include "trace_targets.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/gpu/vendors.hpp"
#include "gpufeed/trace/diagnose_platform.hpp"
#include "gpufeed/trace/monitor_session.hpp"

namespace gpufeed::cli {
namespace {

struct MonitorOptions {
  MonitorRequest request;
  std::string listen = "127.0.0.1:9464";
  bool no_listen = false;
  bool force = false;
  bool quiet = false;
};

int run_monitor(MonitorOptions& o, Context& ctx) {
  if (o.no_listen) {
    o.request.listen.reset();
  } else {
    o.request.listen = parse_listen_address(o.listen);
  }
  if (!o.request.listen && o.request.jsonl_path.empty()) {
    throw usage_error("--no-listen without --jsonl leaves nothing to read the metrics from",
                      "give --jsonl FILE (or - for stdout), or drop --no-listen");
  }
  if (o.request.window_s < o.request.interval_s) {
    throw usage_error(fmt::format("--window {:g} s is shorter than --interval {:g} s", o.request.window_s, o.request.interval_s),
                      "the window holds several intervals: e.g. --interval 1 --window 30");
  }
  check_trace_targets(o.request.pids, o.force, ctx.io.host);
  MonitorIo io{ctx.io.host, ctx.io.out, ctx.io.err, o.quiet};
  const MonitorOutcome outcome = run_monitor_session(o.request, io);
  if (outcome.command_status) return *outcome.command_status;
  if (outcome.launched_pid > 0) return wait_for_command(outcome.launched_pid, ctx.io.err, o.quiet);
  return 0;
}

}  // namespace

Command add_monitor_command(CLI::App& app) {
  auto o = std::make_shared<MonitorOptions>();
  CLI::App* cmd = app.add_subcommand(
      "monitor",
      "Watch a running training job and its DataLoader workers until it ends: data wait, workers, slow calls per "
      "mount, CPU pressure and diagnose's findings, as Prometheus metrics and JSON Lines");
  CLI::Option* pid = add_pid_option(*cmd, o->request.pids, "Watch this running process (repeat: one per rank)");
  cmd->add_option("--comm", o->request.comm,
                  "Follow every process with this command name (as 'ps -o comm' shows it), found again each second: "
                  "a job that restarts is followed again")
      ->type_name("NAME")
      ->excludes(pid);
  cmd->add_option("--cgroup", o->request.cgroup,
                  "Follow the processes in this cgroup directory (relative: under /sys/fs/cgroup), found again each "
                  "second; with --comm, only those with that name")
      ->type_name("DIR")
      ->excludes(pid);
  cmd->add_flag("--force", o->force, "Watch --pid 1 (init) too: that follows every process of the system");
  cmd->add_option("--interval", o->request.interval_s, "Seconds between metric updates")
      ->check(real_in("--interval", {0.01, 3600, "seconds", false, "1"}))
      ->default_val(1.0)
      ->type_name("SEC");
  cmd->add_option("--window", o->request.window_s,
                  "Seconds of history the gauges and findings cover (a sliding window, as diagnose's --duration)")
      ->check(real_in("--window", {1, 3600, "seconds", false, "30"}))
      ->default_val(30)
      ->type_name("SEC");
  cmd->add_option("--duration", o->request.duration_s, "Stop after this many seconds (default: when the job ends or on Ctrl-C)")
      ->check(real_in("--duration", {0, 31536000, "seconds", true, "3600"}))
      ->type_name("SEC");
  cmd->add_option("--slow-ms", o->request.slow_call_ms, "Count path and file calls slower than this as slow calls")
      ->check(real_in("--slow-ms", {0, 600000, "milliseconds", true, "1"}))
      ->default_val(1.0)
      ->type_name("MS");
  cmd->add_option("--listen", o->listen, "Serve Prometheus metrics on HOST:PORT at /metrics (:PORT: all interfaces)")
      ->default_val("127.0.0.1:9464")
      ->type_name("HOST:PORT");
  cmd->add_flag("--no-listen", o->no_listen, "Serve no HTTP endpoint (JSON Lines only)");
  cmd->add_option("--jsonl", o->request.jsonl_path,
                  "Append one JSON record per interval, and one per finding change, to FILE (- for stdout)")
      ->check(output_path("--jsonl", true))
      ->type_name("FILE");
  cmd->add_option("--gpu", o->request.gpu, "GPU sampler for busy, idle gaps, power and energy: " +
                                                sampler_choices_text(true, true))
      ->check(one_of("--gpu", sampler_choices(true)))
      ->default_val("auto")
      ->type_name("BACKEND");
  cmd->add_option("--batch-size", o->request.batch_size,
                  "Samples per batch: with GPU power, monitor exports samples per joule")
      ->check(whole_in("--batch-size", {1, 1048576, "samples", false, "64"}))
      ->type_name("N");
  cmd->add_option("--job", o->request.job, "The job label on every metric (default: the first rank's command name)")
      ->type_name("NAME");
  cmd->add_flag("-q,--quiet", o->quiet, "No notes and no finding lines on stderr (errors only)");
  cmd->add_option("command", o->request.command, "The command to launch and watch (after --)")->type_name("CMD");
  cmd->footer(R"(Give --pid (one per rank) to watch a running job, or '-- CMD ARGS...' to launch one; monitor runs until the
job ends (exit 0, or the command's exit code), --duration passes, or SIGINT/SIGTERM (exit 0), and the
job is never signalled. With --comm and/or --cgroup it follows a job that restarts: each matching process
under no followed one is a rank, and monitor runs on after the job ends, until --duration or a signal. DataLoader workers re-forked each epoch are followed. Needs root or
CAP_BPF+CAP_PERFMON (eBPF). Findings are diagnose's, on the window; a start or stop is logged once.
Alert rules for these metrics: profiles/prometheus/gpufeed-rules.yml (docs/monitor.md).

Examples:
  gpufeed monitor --pid $(pgrep -f train.py | head -1)                 # scrape http://127.0.0.1:9464/metrics
  gpufeed monitor --no-listen --jsonl feed.jsonl -- python train.py
  gpufeed monitor --pid 4242 --pid 4243 --listen :9464 --job resnet50   # two ranks, all interfaces
  gpufeed monitor --cgroup system.slice/train.service --comm python3    # the unit's trainer, across restarts)");
  return {cmd, [o](Context& ctx) { return run_monitor(*o, ctx); }};
}

}  // namespace gpufeed::cli
