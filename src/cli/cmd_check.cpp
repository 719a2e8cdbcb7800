// `gpufeed check --config FILE`: the CI gate. Re-measures the tuned config on
// this machine and fails (exit 4) when it does not fit or falls short of its
// prediction by more than --tolerance (docs/tune.md).
#include <sys/resource.h>

#include <fmt/format.h>

#include <chrono>

#include "bench_setup.hpp"
#include "context.hpp"
#include "gpufeed/input_file.hpp"
#include "gpufeed/text.hpp"
#include "option_values.hpp"
#include "stores.hpp"
#include "gpufeed/loader/basic_steps.hpp"
#include "gpufeed/os/stop_signals.hpp"
#include "gpufeed/probe/host_inspector.hpp"
#include "gpufeed/probe/hwloc_topology.hpp"
#include "gpufeed/probe_report.hpp"
#include "gpufeed/trace/job_wait_trace.hpp"
#include "gpufeed/trace/proc_reader.hpp"
#include "gpufeed/tune/config.hpp"
#include "gpufeed/units.hpp"
#include "tune_trials.hpp"

namespace gpufeed::cli {
namespace {

struct CheckOptions {
  std::string config_path;
  double tolerance = 0.10;
  int steps = 60;        // steady steps after the warm-up, as tune's full trial
  double seconds = 120;  // the cap
  DataOptions data;  // data.data overrides the config's dataset; the store options reach it either way
  std::string device = "auto";
  std::string exec;  // the job to run, given here: a config never runs a command by itself
  OutputOptions output;
};

struct CheckItem {
  std::string name;
  bool ok = true;
  std::string detail;
};

constexpr InputRole kConfigRole{"the config", "give the file gpufeed tune wrote"};

Json load(const std::string& path) {
  return parse_json_text(read_input_file(path, kConfigRole), "the config", path, kConfigRole.hint);
}

// A config names the job it was tuned on (workload.exec), but configs are
// committed and edited: check runs only the command its own command line
// gives, and says so before it runs it.
std::string job_to_run(const tune::TunedConfig& c, const CheckOptions& o) {
  if (c.workload.target != "exec") {
    if (!o.exec.empty()) {
      throw usage_error(fmt::format("--exec: the config {} was tuned on gpufeed's built-in loader, not a job",
                                    printable(o.config_path)),
                        "drop --exec");
    }
    return {};
  }
  if (o.exec.empty()) {
    throw usage_error(fmt::format("the config {} measures a job (workload.exec: '{}'), and check runs no command "
                                  "from a file",
                                  printable(o.config_path), printable(c.workload.exec)),
                      "review it, then give it on check's own command line: --exec '" + printable(c.workload.exec) + "'");
  }
  return o.exec;
}

// The most workers per rank this machine holds: its free memory and its
// open-file limit (a config's page-locked memory is checked on its own).
tune::WorkerCap this_machines_worker_cap(const tune::TunedConfig& c, int ranks) {
  tune::WorkerCapInputs in;
  if (const auto mem = ProcReader().meminfo()) in.mem_available = mem->available_bytes / static_cast<std::uint64_t>(2 * ranks);
  in.bytes_per_worker = c.workload.target == "exec" ? 64ULL << 20 : 4ULL << 20;
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    in.open_files = files.rlim_cur / static_cast<std::uint64_t>(ranks);
  }
  return tune::worker_cap(in);
}

int run_check(CheckOptions& o, Context& ctx) {
  ctx.check_json_target(o.output);
  const Json doc = load(o.config_path);
  std::vector<CheckItem> items;
  std::optional<double> measured;
  std::optional<tune::TunedConfig> config;

  const std::string schema = doc.is_object() ? doc.value("schema", "") : "";
  if (schema != "gpufeed.config/v1") {
    items.push_back({"schema", false,
                     fmt::format("schema \"{}\" is not gpufeed.config/v1: re-run gpufeed tune with this version", schema)});
  } else {
    config = tune::config_from_json(doc, o.config_path);
  }
  const std::string exec = config ? job_to_run(*config, o) : std::string();

  if (config) {
    const auto& c = *config;
    ProbeReport probe = probe_this_host(ctx.io);
    const int usable = probe.process ? probe.process->usable_cpus() : 1;
    const int ranks = std::max(1, c.workload.ranks);
    const int workers = c.chosen.workers * ranks;
    std::uint64_t budget = 0;
    for (const auto& rb : probe.budget.ranks) budget = budget ? std::min(budget, rb.prefetch_bytes) : rb.prefetch_bytes;
    // What the config's batches take, whatever its own record says (a config is edited).
    const std::uint64_t pinned = std::max<std::uint64_t>(
        c.pinned_bytes_per_rank, static_cast<std::uint64_t>(c.chosen.workers) * static_cast<std::uint64_t>(c.chosen.prefetch_factor) *
                                     static_cast<std::uint64_t>(c.batch_size) * c.workload.sample_bytes);
    // The workers this machine can hold (search.hpp: worker_cap, as tune caps its space).
    const tune::WorkerCap cap = this_machines_worker_cap(c, ranks);
    items.push_back({"workers", c.chosen.workers <= cap.workers,
                     fmt::format("{} workers per rank; this machine allows {} ({})", c.chosen.workers, cap.workers,
                                 cap.because)});
    if (budget > 0) {
      items.push_back({"memory", pinned <= budget,
                       fmt::format("{} page-locked per rank against a budget of {} per rank", format_bytes(pinned),
                                   format_bytes(budget))});
    }
    const bool fits = std::all_of(items.begin(), items.end(), [](const CheckItem& i) { return i.ok; });
    if (c.workload.target == "simulate") {
      items.push_back({"throughput", true, "not re-measured: the config came from tune --simulate"});
    } else if (fits) {
      os::StopOnSignal stop;
      std::unique_ptr<tune::TrialRunner> runner;
      DataOptions data = o.data;
      if (data.data.empty()) data.data = c.workload.data;
      std::unique_ptr<loader::SampleSource> source;
      std::vector<loader::SampleInfo> samples;
      std::unique_ptr<loader::SampleTransform> transform;
      if (c.workload.target == "exec") {
        const bool data_wait = c.workload.metric == "data-wait";
        if (const auto why = data_wait ? JobWaitTrace::unavailable_reason() : std::nullopt) {
          throw Error(ErrorKind::Privilege, "the config's job is measured by tracing it (metric data-wait), and eBPF is "
                      "not available: " + *why, "run check as root");
        }
        if (!o.output.quiet) ctx.io.err << "gpufeed check: running your job (--exec): " << printable(exec) << "\n";
        runner = std::make_unique<ExecTrialRunner>(
            ExecTrialSetup{exec, c.workload.metric_regex.empty() ? "samples/s: ([0-9.]+)" : c.workload.metric_regex,
                           c.batch_size, &stop.flag(), std::max(1, c.workload.ranks), 0, data_wait,
                           c.workload.data_wait_step_ms});
      } else {
        source = open_data(data, ctx.io);
        samples = list_data(*source, ctx.io, o.output.quiet);
        WorkOptions work;
        work.decode = c.workload.decode;
        work.full_decode = c.workload.full_decode;
        work.filter = c.workload.filter;
        work.crop = c.workload.crop;
        // cpu_us with a decode is CPU the job's workers pay on top of it (tune --from).
        const bool decoding = c.workload.decode != "none";
        work.cpu_us = decoding ? 0 : c.workload.cpu_us;
        work.image_size = c.workload.image_size;
        if (c.workload.decode == "none" && c.workload.sample_bytes) work.sample_bytes = std::to_string(c.workload.sample_bytes);
        transform = loader::with_cpu_scale(
            loader::with_extra_cpu(make_transform(work, samples), decoding ? c.workload.cpu_us : 0), c.workload.cpu_scale);
        BuiltinTrialSetup setup;
        setup.source = source.get();
        setup.samples = &samples;
        setup.transform = transform.get();
        setup.device = parse_device(o.device);
        setup.step_ms = c.workload.step_ms;
        setup.step_cpu_ms = c.workload.step_cpu_ms;
        setup.ranks = ranks;
        setup.batch_size = c.batch_size;
        setup.access = {c.workload.stats_per_sample, c.workload.extra_opens_per_sample};
        setup.stop = &stop.flag();
        runner = std::make_unique<BuiltinTrialRunner>(setup);
      }
      const auto started = std::chrono::steady_clock::now();
      const auto trial = runner->run(c.chosen, tune::TrialLength{o.steps, o.seconds});
      // A cancelled CI job must never pass (nor fail on a part of a run).
      if (stop.flag().load()) {
        throw runtime_error(fmt::format("check was interrupted after {:.1f} s; no verdict",
                                        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()),
                            "run it again to the end");
      }
      // Oversubscription is judged from the CPU the run used, not by
      // counting: workers that wait on storage sleep, and more of them than
      // cores is fine until their samples use the cores up.
      const double share = tune::cpu_share(trial, usable, ranks);
      if (trial.ok) {
        items.push_back(
            {"cores", !(workers > usable && share >= 0.95),
             share > 0 ? fmt::format("{} workers x {} rank(s) = {} on {} usable CPUs used {:.0f}% of them{}", c.chosen.workers,
                                     ranks, workers, usable, share * 100,
                                     workers > usable && share >= 0.95 ? ": more workers than CPUs, all busy (oversubscribed)" : "")
                       : fmt::format("{} workers x {} rank(s) = {} on {} usable CPUs (their CPU was not measured)",
                                     c.chosen.workers, ranks, workers, usable)});
      }
      if (!trial.ok) {
        items.push_back({"throughput", false, "the run failed: " + trial.note});
      } else {
        measured = trial.samples_per_s;
        const double floor = c.prediction.samples_per_s * (1 - o.tolerance);
        items.push_back({"throughput", *measured >= floor,
                         fmt::format("measured {:.0f} samples/s per rank; predicted {:.0f} (-{:g}% allowed: at least {:.0f})",
                                     *measured, c.prediction.samples_per_s, o.tolerance * 100, floor) +
                             (trial.capped ? " (" + trial.note + ")" : "")});
      }
    }
  }

  const bool pass = std::all_of(items.begin(), items.end(), [](const CheckItem& i) { return i.ok; });
  if (ctx.wants_text(o.output)) {
    ctx.io.out << ctx.style.heading("gpufeed check ") << o.config_path << "\n";
    for (const auto& i : items) {
      ctx.io.out << "  " << (i.ok ? ctx.style.good("pass") : ctx.style.bad("FAIL")) << "  " << fmt::format("{:<11}", i.name)
                 << i.detail << "\n";
    }
    ctx.io.out << (pass ? ctx.style.good("passed") : ctx.style.bad("failed")) << "\n";
  }
  Json checks = Json::array();
  for (const auto& i : items) checks.push_back({{"name", i.name}, {"ok", i.ok}, {"detail", i.detail}});
  Json body = {{"config", o.config_path},
               {"verdict", pass ? "pass" : "fail"},
               {"tolerance", o.tolerance},
               {"predicted_samples_per_s", config ? Json(config->prediction.samples_per_s) : Json(nullptr)},
               {"measured_samples_per_s", measured ? Json(*measured) : Json(nullptr)},
               {"exec", exec.empty() ? Json(nullptr) : Json(exec)},
               {"checks", checks}};
  ctx.emit_json(o.output, make_document("check", inspect_host(ctx.io.host), body, ctx.io.now()));
  if (!pass) {
    const auto failed = std::find_if(items.begin(), items.end(), [](const CheckItem& i) { return !i.ok; });
    throw Error(ErrorKind::Findings, fmt::format("check failed ({}): {}", failed->name, failed->detail),
                "re-run gpufeed tune on this machine, or raise --tolerance if the machine is noisy");
  }
  return 0;
}

}  // namespace

Command add_check_command(CLI::App& app) {
  auto o = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand(
      "check", "CI gate: re-measure a config from gpufeed tune on this machine; exit 4 when it does not fit or "
               "falls short of its prediction");
  cmd->add_option("--config", o->config_path, "The config gpufeed tune wrote")
      ->check(input_path("--config", kConfigRole))->required()->type_name("FILE");
  cmd->add_option("--tolerance", o->tolerance, "Allowed shortfall against the prediction")
      ->check(real_in("--tolerance", {0, 0.99, "a share", false, "0.1"}))->default_val(0.10);
  cmd->add_option("--steps", o->steps, "Steady-state steps to measure after the warm-up (prefetch x workers batches)")
      ->check(whole_in("--steps", {1, 1000000, "steps", false, "60"}))->default_val(60);
  cmd->add_option("--seconds", o->seconds, "The most the measurement may take (a run it cuts short says so)")
      ->check(real_in("--seconds", {0, 86400, "seconds", true, "120"}))->default_val(120);
  cmd->add_option("--data", o->data.data, "Measure on this dataset instead of the config's: " + data_specs())
      ->type_name("SOURCE");
  add_store_options(*cmd, o->data, false);
  cmd->add_option("--device", o->device, "auto, cuda, hip, host or cpu")
      ->check(one_of("--device", {"auto", "cuda", "hip", "host", "cpu"}))->default_val("auto");
  cmd->add_option("--exec", o->exec,
                  "The job to measure, for a config tuned with tune --exec: check runs no command from the config "
                  "file itself, so give it here (usually the config's workload.exec)")
      ->type_name("CMD");
  add_output_options(*cmd, o->output);
  cmd->footer(R"(Exit codes: 0 pass, 4 check failed (too slow, more workers than CPUs with every CPU busy, page-locked
memory over the budget, or an unknown config schema), 2 bad input, 1 the run failed or was interrupted
(no verdict). A config from tune --exec names its job, but check runs only a command given with
--exec on its own command line.

Examples:
  gpufeed check --config gpufeed-config.json --tolerance 0.1 --json check.json
  gpufeed check --config job-config.json --exec 'python train.py --workers {num_workers}')");
  return {cmd, [o](Context& ctx) { return run_check(*o, ctx); }};
}

}  // namespace gpufeed::cli
