// `gpufeed diagnose`: options -> DiagnoseRequest -> one session -> report.
#include <fmt/format.h>

#include "context.hpp"
#include "gpufeed/atomic_file.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/probe/host_inspector.hpp"
#include "gpufeed/trace/diagnose_session.hpp"

namespace gpufeed::cli {
namespace {

struct DiagnoseOptions {
  DiagnoseRequest request;
  bool no_ebpf = false;
  bool require_ebpf = false;
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
  if (o.request.sample_hz < 1 || o.request.sample_hz > 100) {
    throw usage_error(fmt::format("--sample-hz {} is out of range", o.request.sample_hz), "use 1 to 100 (default 10)");
  }
  if (o.request.slow_call_ms <= 0) throw usage_error("--slow-ms must be positive", "e.g. --slow-ms 1");
  if (o.request.samples_per_s && *o.request.samples_per_s <= 0) {
    throw usage_error("--samples-per-s must be positive", "give the job's samples/s, e.g. --samples-per-s 2400");
  }
  if (o.request.gpu_hz < 1 || o.request.gpu_hz > 1000) {
    throw usage_error(fmt::format("--gpu-hz {} is out of range", o.request.gpu_hz), "use 1 to 1000 (default 10)");
  }
  o.request.ebpf = o.no_ebpf ? EbpfMode::Off : (o.require_ebpf ? EbpfMode::Required : EbpfMode::Auto);
  ctx.check_json_target(o.output);
  if (!o.trace_path.empty()) check_output_path(o.trace_path);

  SessionIo session_io{ctx.io.host, ctx.io.err, ctx.io.err_is_tty && !o.output.quiet, o.output.quiet};
  DiagnoseOutcome outcome = run_diagnose_session(o.request, session_io);
  const DiagnosisReport& report = outcome.report;

  if (ctx.wants_text(o.output)) render_text(report, ctx.style, o.output.verbose, ctx.io.out);
  HostInfo host = inspect_host(ctx.io.host);
  ctx.emit_json(o.output, make_document("diagnosis", host, to_json(report), ctx.io.now()));
  if (!o.trace_path.empty()) {
    write_file_atomically(o.trace_path, chrome_trace(report).dump() + "\n");
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
  cmd->add_option("--pid", o->request.pids, "Attach to this running process (repeat: one per rank)")
      ->type_name("PID");
  cmd->add_option("--duration", o->request.duration_s, "Seconds to trace; Ctrl-C or the job's exit ends earlier")
      ->default_val(30)
      ->type_name("SEC");
  cmd->add_option("--slow-ms", o->request.slow_call_ms, "Record path and file calls slower than this")
      ->default_val(1.0)
      ->type_name("MS");
  cmd->add_option("--sample-hz", o->request.sample_hz, "How often /proc and PSI are sampled")
      ->default_val(10)
      ->type_name("HZ");
  cmd->add_flag("--no-ebpf", o->no_ebpf, "Do not trace with eBPF: /proc sampling only (lower confidence)");
  cmd->add_flag("--require-ebpf", o->require_ebpf, "Fail (exit 3) instead of falling back to /proc sampling");
  cmd->add_option("--gpu", o->request.gpu, "GPU sampler: auto (NVML, then rocm-smi), nvml, rocm-smi or none")
      ->default_val("auto")
      ->type_name("BACKEND");
  cmd->add_option("--gpu-hz", o->request.gpu_hz, "GPU sampling rate")->default_val(10)->type_name("HZ");
  cmd->add_option("--gpu-trace", o->request.gpu_trace, "Take GPU activity from a 'gpufeed gpu record' file")
      ->type_name("FILE");
  cmd->add_option("--samples-per-s", o->request.samples_per_s,
                  "The job's throughput (as it logs it), to report GPU samples per joule")
      ->type_name("N");
  cmd->add_option("--trace", o->trace_path, "Write a timeline (Chrome trace-event JSON, opens in Perfetto)")
      ->type_name("FILE");
  cmd->add_option("--fail-on", o->fail_on, "Exit 4 when a finding has this severity or worse")
      ->type_name("info|warning|critical");
  add_output_options(*cmd, o->output);
  cmd->add_option("command", o->request.command, "The command to launch and trace (after --)")->type_name("CMD");
  cmd->footer(
      "Give --pid (one per rank) to attach to a running job, or '-- CMD ARGS...' to launch one and trace it from\n"
      "its first instruction; gpufeed then exits with the command's exit code (4 if --fail-on triggers).\n"
      "Needs root or CAP_BPF+CAP_PERFMON for eBPF; otherwise it samples /proc and says so.\n\n"
      "Examples:\n"
      "  gpufeed diagnose --pid $(pgrep -f train.py | head -1) --duration 30\n"
      "  gpufeed diagnose --json diag.json --trace diag.trace.json -- python train.py --workers 4\n"
      "  gpufeed diagnose --pid 4242 --fail-on warning --quiet --json -     # for CI");
  return {cmd, [o](Context& ctx) { return run_diagnose(*o, ctx); }};
}

}  // namespace gpufeed::cli
