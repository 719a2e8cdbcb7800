// `gpufeed diagnose`: options -> DiagnoseRequest -> one session (app/) -> report.
#include <fmt/format.h>

#include "context.hpp"
#include "gpufeed/text.hpp"
#include "option_values.hpp"
#include "trace_targets.hpp"
#include "gpufeed/atomic_file.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/gpu/vendors.hpp"
#include "gpufeed/probe/host_inspector.hpp"
#include "gpufeed/app/diagnose_session.hpp"
#include "gpufeed/trace/diagnose_platform.hpp"

namespace gpufeed::cli {
namespace {

struct DiagnoseOptions {
  app::DiagnoseRequest request;
  bool no_ebpf = false;
  bool require_ebpf = false;
  bool force = false;
  std::string trace_path;
  std::string fail_on;
  OutputOptions output;
};

int run_diagnose(DiagnoseOptions& o, Context& ctx) {
  std::optional<Severity> fail_on;
  if (!o.fail_on.empty()) {
    fail_on = parse_severity(o.fail_on);
    if (!fail_on) {
      throw usage_error(fmt::format("--fail-on '{}' is not a severity", o.fail_on), "use info, warning or critical");
    }
  }
  if (o.no_ebpf && o.require_ebpf) throw usage_error("--no-ebpf and --require-ebpf contradict each other", "give one");
  o.request.ebpf = o.no_ebpf ? app::EbpfMode::Off : (o.require_ebpf ? app::EbpfMode::Required : app::EbpfMode::Auto);
  ctx.check_json_target(o.output);
  if (!o.trace_path.empty()) {
    check_output_path(o.trace_path);
    if (!o.output.json_path.empty() && o.output.json_path != "-" && same_output_file(o.output.json_path, o.trace_path)) {
      throw usage_error(fmt::format("--json and --trace both name {}", printable(o.trace_path)),
                        "give each its own file");
    }
  }
  check_trace_targets(o.request.pids, o.force, ctx.io.host);

  app::DiagnoseIo session_io{ctx.io.err, ctx.io.err_is_tty && !o.output.quiet, o.output.quiet};
  // The platform catches SIGINT/SIGTERM for the window; it is gone (and the
  // signals restored) before the report is written and a command waited for.
  const app::DiagnoseOutcome outcome = [&] {
    auto platform = make_diagnose_platform(ctx.io.host);
    return app::run_diagnose_session(o.request, *platform, session_io);
  }();
  const DiagnosisReport& report = outcome.report;

  if (ctx.wants_text(o.output)) render_text(report, ctx.style, o.output.verbose, ctx.io.out);
  HostInfo host = inspect_host(ctx.io.host);
  ctx.emit_json(o.output, make_document("diagnosis", host, to_json(report), ctx.io.now()));
  if (!o.trace_path.empty()) {
    write_output(o.trace_path, dump_json(chrome_trace(report)) + "\n");
    if (!o.output.quiet) ctx.io.out << ctx.style.dim("Timeline written to " + o.trace_path + " (open in Perfetto)") << "\n";
  }

  int code = 0;
  if (outcome.command_status) code = *outcome.command_status;
  if (outcome.launched_pid > 0) code = wait_for_command(outcome.launched_pid, ctx.io.err, o.output.quiet);
  if (fail_on) {
    if (auto worst = worst_severity(report); worst && *worst >= *fail_on) {
      throw Error(ErrorKind::Findings,
                  fmt::format("findings at or above '{}': {}", o.fail_on, report.findings.front().id),
                  "see the report; the exit code is 4 for --fail-on");
    }
  }
  return code;
}

}  // namespace

Command add_diagnose_command(CLI::App& app) {
  auto o = std::make_shared<DiagnoseOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diagnose",
      "Attach to a training job and its DataLoader workers (or launch one), trace syscall latency with eBPF, "
      "sample /proc, and report why the GPUs starve, with evidence and a fix");
  add_pid_option(*cmd, o->request.pids, "Attach to this running process (repeat: one per rank)");
  cmd->add_flag("--force", o->force, "Trace --pid 1 (init) too: that follows every process of the system");
  cmd->add_option("--duration", o->request.duration_s, "Seconds to trace; Ctrl-C or the job's exit ends earlier")
      ->check(real_in("--duration", {0, 604800, "seconds", true, "30"}))
      ->default_val(30)
      ->type_name("SEC");
  cmd->add_option("--slow-ms", o->request.slow_call_ms, "Record path and file calls slower than this")
      ->check(real_in("--slow-ms", {0, 600000, "milliseconds", true, "1"}))
      ->default_val(1.0)
      ->type_name("MS");
  cmd->add_option("--sample-hz", o->request.sample_hz, "How often /proc and PSI are sampled")
      ->check(real_in("--sample-hz", {1, 100, "samples per second", false, "10"}))
      ->default_val(10)
      ->type_name("HZ");
  cmd->add_flag("--no-ebpf", o->no_ebpf, "Do not trace with eBPF: /proc sampling only (lower confidence)");
  cmd->add_flag("--require-ebpf", o->require_ebpf, "Fail (exit 3) instead of falling back to /proc sampling");
  cmd->add_option("--gpu", o->request.gpu, "GPU sampler: " + sampler_choices_text(true, true))
      ->check(one_of("--gpu", sampler_choices(true)))
      ->default_val("auto")
      ->type_name("BACKEND");
  cmd->add_option("--gpu-hz", o->request.gpu_hz, "GPU sampling rate")
      ->check(real_in("--gpu-hz", {1, 1000, "samples per second", false, "10"}))
      ->default_val(10)
      ->type_name("HZ");
  cmd->add_option("--gpu-trace", o->request.gpu_trace, "Take GPU activity from a 'gpufeed gpu record' file")
      ->check(input_path("--gpu-trace", {"GPU trace", "give a file written by 'gpufeed gpu record'"}))
      ->type_name("FILE");
  cmd->add_option("--samples-per-s", o->request.samples_per_s,
                  "The job's throughput (as it logs it), to report GPU samples per joule")
      ->check(real_in("--samples-per-s", {0, 1e9, "samples per second", true, "2400"}))
      ->type_name("N");
  cmd->add_option("--trace", o->trace_path, "Write a timeline (Chrome trace-event JSON, opens in Perfetto)")
      ->check(output_path("--trace", false))
      ->type_name("FILE");
  cmd->add_option("--fail-on", o->fail_on, "Exit 4 when a finding has this severity or worse")
      ->check(one_of("--fail-on", {"info", "warning", "critical"}))
      ->type_name("info|warning|critical");
  add_output_options(*cmd, o->output);
  cmd->add_option("command", o->request.command, "The command to launch and trace (after --)")->type_name("CMD");
  cmd->footer(R"(Give --pid (one per rank) to attach to a running job, or '-- CMD ARGS...' to launch one and trace it from
its first instruction; gpufeed then exits with the command's exit code (4 if --fail-on triggers).
Needs root or CAP_BPF+CAP_PERFMON for eBPF; otherwise it samples /proc and says so.

Examples:
  gpufeed diagnose --pid $(pgrep -f train.py | head -1) --duration 30
  gpufeed diagnose --json diag.json --trace diag.trace.json -- python train.py --workers 4
  gpufeed diagnose --pid 4242 --fail-on warning --quiet --json -     # for CI)");
  return {cmd, [o](Context& ctx) { return run_diagnose(*o, ctx); }};
}

}  // namespace gpufeed::cli
