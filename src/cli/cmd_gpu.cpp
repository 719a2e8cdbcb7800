// `gpufeed gpu record`: sample the GPUs into a trace file that
// `diagnose --gpu-trace` reads, so a node can be captured and analysed elsewhere.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "context.hpp"
#include "gpufeed/input_file.hpp"
#include "gpufeed/os/stop_signals.hpp"
#include "option_values.hpp"
#include "progress_line.hpp"
#include "gpufeed/atomic_file.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/gpu/activity.hpp"
#include "gpufeed/gpu/trace.hpp"
#include "gpufeed/gpu/vendor_samplers.hpp"
#include "gpufeed/gpu/vendors.hpp"
#include "gpufeed/probe/host_inspector.hpp"

namespace gpufeed::cli {
namespace {

struct RecordOptions {
  std::string out;
  double duration_s = 60;
  double hz = 10;
  std::string backend = "auto";
  bool quiet = false;
};

int run_record(const RecordOptions& o, Context& ctx) {
  if (o.out.empty()) throw usage_error("gpu record needs --out FILE", "e.g. gpufeed gpu record --out node7.gputrace");
  check_output_path(o.out);
  GpuOpenResult opened = open_gpu_sampler(o.backend);
  if (!opened.sampler) {
    std::vector<std::string> vendors;
    for (const auto& v : gpu_vendors()) vendors.push_back(fmt::format("{} ({})", v.name, v.monitoring.name));
    throw runtime_error("no GPU sampler available: " + opened.unavailable,
                        "run on a node with an " + join_names(vendors, " or ") + " GPU and its driver");
  }
  // Ctrl-C or SIGTERM ends the recording early; what was sampled is written.
  os::StopOnSignal stop;
  const auto start = std::chrono::steady_clock::now();
  auto clock = [start] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  GpuTrace trace;
  {
    ProgressLine progress(ctx.io.err, ctx.io.err_is_tty && !o.quiet);
    GpuSamplingThread thread(*opened.sampler, o.hz, clock);
    while (!stop.flag().load() && clock() < o.duration_s) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      progress.show(fmt::format("  recording {} GPU(s) with {}: {:.0f}/{:.0f} s", opened.sampler->devices().size(),
                                opened.sampler->backend(), clock(), o.duration_s));
    }
    thread.stop();
    trace = thread.trace();
  }
  write_output(o.out, write_gpu_trace(trace, inspect_host(ctx.io.host), ctx.io.now()));
  if (!o.quiet) {
    ctx.io.out << fmt::format("Recorded {} samples of {} GPU(s) with {} over {:.1f} s into {}\n", trace.samples.size(),
                              trace.devices.size(), trace.backend, clock(), o.out);
    for (const auto& d : trace.devices) {
      std::vector<GpuSample> mine;
      for (const auto& s : trace.samples) {
        if (s.device == d.index) mine.push_back(s);
      }
      const auto a = analyse_gpu(mine);
      ctx.io.out << fmt::format("  {} {} {}: busy {}\n", d.index, d.bus_id, d.name,
                                a.busy_fraction ? fmt::format("{:.0f}%", *a.busy_fraction * 100) : "n/a");
    }
  }
  return 0;
}

struct ShowOptions {
  std::string trace;
  OutputOptions output;
};

// One row per device: what analyse_gpu makes of a trace.
Json device_summary(const GpuDevice& d, const GpuActivity& a, bool fine) {
  auto num = [](std::optional<double> v, double k = 1.0) { return v ? Json(*v * k) : Json(nullptr); };
  return {{"index", d.index},        {"name", d.name},
          {"bus_id", d.bus_id},      {"samples", a.samples},
          {"fine_grained", fine},    {"busy_fraction", num(a.busy_fraction)},
          {"idle_gaps", a.idle_gaps_s.size()},
          {"mean_idle_gap_ms", num(a.mean_idle_gap_s, 1e3)},
          {"period_ms", num(a.period_s, 1e3)},
          {"period_strength", num(a.period_strength)},
          {"energy_j", num(a.energy_j)},
          {"mean_power_w", num(a.mean_power_w)}};
}

int run_show(const ShowOptions& o, Context& ctx) {
  ctx.check_json_target(o.output);
  const std::string text = read_input_file(o.trace, {"GPU trace", "give a file written by 'gpufeed gpu record'"});
  const GpuTrace trace = read_gpu_trace(text, o.trace);
  Json devices = Json::array();
  TextTable table({"GPU", "bus id", "name", "samples", "busy", "idle gaps", "mean gap", "period", "energy"});
  for (const auto& d : trace.devices) {
    const DeviceActivity analysed = analyse_device(trace.samples, trace.buffered, d.index);
    const GpuActivity& a = analysed.activity;
    const bool use_fine = analysed.fine_grained;
    devices.push_back(device_summary(d, a, use_fine));
    table.add({std::to_string(d.index), d.bus_id, d.name, std::to_string(a.samples),
               a.busy_fraction ? fmt::format("{:.1f}%", *a.busy_fraction * 100) : "-",
               std::to_string(a.idle_gaps_s.size()),
               a.mean_idle_gap_s ? fmt::format("{:.0f} ms", *a.mean_idle_gap_s * 1e3) : "-",
               a.period_s ? fmt::format("{:.0f} ms", *a.period_s * 1e3) : "-",
               a.energy_j ? fmt::format("{:.0f} J", *a.energy_j) : "-"});
  }
  if (ctx.wants_text(o.output)) {
    ctx.io.out << ctx.style.heading(fmt::format("GPU trace {} ({}, {:.0f} Hz)", o.trace, trace.backend, trace.sample_hz))
               << "\n";
    table.print(ctx.io.out, ctx.style);
    ctx.io.out << ctx.style.dim("  " + busy_meaning(trace.backend)) << "\n";
  }
  ctx.emit_json(o.output, make_document("gpushow", inspect_host(ctx.io.host),
                                        Json{{"trace", o.trace}, {"backend", trace.backend},
                                             {"sample_hz", trace.sample_hz}, {"devices", devices}},
                                        ctx.io.now()));
  return 0;
}

}  // namespace

Command add_gpu_show_command(CLI::App& gpu) {
  auto o = std::make_shared<ShowOptions>();
  CLI::App* show = gpu.add_subcommand("show", "Analyse a recorded GPU trace: busy %, idle gaps, period, energy");
  show->add_option("trace", o->trace, "A file written by 'gpufeed gpu record'")
      ->check(input_path("trace", {"GPU trace", "give a file written by 'gpufeed gpu record'"}))
      ->required()->type_name("FILE");
  add_output_options(*show, o->output);
  show->footer("Examples:\n  gpufeed gpu show node7.gputrace\n  gpufeed gpu show node7.gputrace --json -");
  return {show, [o](Context& ctx) { return run_show(*o, ctx); }};
}

Command add_gpu_command(CLI::App& app) {
  auto o = std::make_shared<RecordOptions>();
  CLI::App* gpu = app.add_subcommand("gpu", "GPU activity tools: record samples on a node to analyse elsewhere");
  gpu->require_subcommand(1);
  CLI::App* record = gpu->add_subcommand("record", "Sample every GPU (busy %, memory, power, temperature) into a trace file");
  record->add_option("--out", o->out, "The trace file to write (gpufeed.gputrace/v1, JSON Lines)")
      ->check(output_path("--out", false))->type_name("FILE");
  record->add_option("--duration", o->duration_s, "Seconds to record; Ctrl-C stops early")
      ->check(real_in("--duration", {0, 604800, "seconds", true, "60"}))->default_val(60)->type_name("SEC");
  record->add_option("--hz", o->hz, "Samples per second")
      ->check(real_in("--hz", {1, 1000, "samples per second", false, "10"}))->default_val(10)->type_name("HZ");
  record->add_option("--backend", o->backend, sampler_choices_text(false, true))
      ->check(one_of("--backend", sampler_choices(false)))->default_val("auto")
      ->type_name("BACKEND");
  record->add_flag("-q,--quiet", o->quiet, "Print nothing but errors");
  record->footer(
      "Examples:\n"
      "  gpufeed gpu record --out node7.gputrace --duration 120\n"
      "  gpufeed diagnose --gpu-trace node7.gputrace --pid 4242     # analyse with a recording");
  gpu->footer("Examples:\n  gpufeed gpu record --out node7.gputrace\n  gpufeed gpu show node7.gputrace");
  return {record, [o](Context& ctx) { return run_record(*o, ctx); }};
}

}  // namespace gpufeed::cli
