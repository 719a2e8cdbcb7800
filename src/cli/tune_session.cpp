// `gpufeed tune`: the request resolved (--from) and checked, then --simulate
// here or the session (app/tune_session.hpp) on this machine.
#include "tune_session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "gpufeed/atomic_file.hpp"
#include "gpufeed/input_file.hpp"
#include "gpufeed/os/stop_signals.hpp"
#include "gpufeed/trace/job_wait_trace.hpp"
#include "gpufeed/tune/advice.hpp"
#include "gpufeed/tune/from_diagnosis.hpp"
#include "gpufeed/tune/profile.hpp"
#include "tune_platform.hpp"

namespace gpufeed::cli {
namespace {

using tune::best_predicted;
using tune::environment_advice;
using tune::predict_all;
using tune::seed_interval;


Json read_json_file(const std::string& path, const InputRole& role) {
  return parse_json_text(read_input_file(path, role), role.what, path, role.hint);
}

std::string resolve_profile(const std::string& name, const Io& io) {
  if (std::filesystem::exists(name)) return name;
  std::vector<std::filesystem::path> roots;
  if (auto env = io.env("GPUFEED_PROFILES")) roots.emplace_back(*env);
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    roots.push_back(exe.parent_path().parent_path() / "profiles");           // build tree: build/../profiles
    roots.push_back(exe.parent_path().parent_path() / "share/gpufeed/profiles");
  }
  roots.emplace_back(GPUFEED_SOURCE_PROFILES);
  for (const auto& root : roots) {
    for (const char* kind : {"hardware", "workloads", ""}) {
      const auto p = root / kind / (name + ".json");
      if (std::filesystem::exists(p)) return p.string();
    }
  }
  throw usage_error(fmt::format("--profile {}: no such profile", name),
                    "give a file, or a name from profiles/hardware or profiles/workloads (e.g. h100-8, imagenet-resnet50)");
}

int run_simulate(const TuneRequest& r, Context& ctx, app::TuneReporter& rep) {
  if (r.profiles.size() != 2) {
    throw usage_error("--simulate needs two --profile: one hardware and one workload",
                      "e.g. --simulate --profile h100-8 --profile imagenet-resnet50");
  }
  std::optional<tune::HardwareProfile> hw;
  std::optional<tune::WorkloadProfile> wl;
  for (const auto& name : r.profiles) {
    const std::string path = resolve_profile(name, ctx.io);
    const Json j = read_json_file(path, {"profile", "give a profile from profiles/ or a file in its form"});
    if (j.value("kind", "") == "hardware") hw = tune::hardware_from_json(j, path);
    else wl = tune::workload_from_json(j, path);
  }
  if (!hw || !wl) throw usage_error("--simulate needs one hardware and one workload profile");
  const auto node = tune::node_from(*hw);
  const auto w = tune::workload_from(*wl, *hw);
  rep.phase(3, fmt::format("model: {} ({} ranks, {:.0f} worker cores) x {}", hw->name, node.ranks, node.worker_cores, wl->name));
  const std::uint64_t mem = static_cast<std::uint64_t>(hw->memory_gib * 0.25 / hw->gpus * 1073741824.0);
  // The space as tune's: 4 workers per core, grown while the best
  // prediction sits at its edge, up to the cap.
  tune::WorkerCapInputs caps;
  caps.user_max = r.max_workers;
  caps.batch_bytes = w.batch_bytes;
  caps.pinned_per_rank = mem;
  const auto cap = tune::worker_cap(caps);
  const int edge = std::min(cap.workers, std::max(1, static_cast<int>(std::lround(node.worker_cores / node.ranks * 4))));
  std::vector<std::string> excluded;
  std::vector<tune::Prediction> predictions;
  tune::widen_to_the_bottleneck(
      tune::default_space(edge, r.both_pin), cap.workers, r.tolerance,
      [&](const tune::SearchSpace& s) { return predict_all(w, node, s, mem, excluded); }, predictions);
  if (predictions.empty()) throw usage_error("no candidate fits the memory budget", "lower --batch-size");
  for (const auto& e : excluded) rep.line("excluded (memory): " + e);
  const auto chosen =
      best_predicted(predictions, r.tolerance, {w.batch_bytes, tune::free_prefetch_bytes(static_cast<double>(mem))});
  rep.phase(5, "choose");
  rep.line(fmt::format("{}: {:.0f} samples/s per rank predicted ({:.0f} on the node), starvation {:.0f}%",
                       tune::describe(chosen.candidate), chosen.samples_per_s, chosen.node_samples_per_s,
                       chosen.starvation * 100));
  tune::TunedConfig config;
  config.batch_size = w.batch_size;
  config.chosen = chosen.candidate;
  const auto [lo, hi] = seed_interval(w, node, chosen.candidate);
  config.prediction = {chosen.samples_per_s, lo, hi, chosen.node_samples_per_s, chosen.starvation, chosen.samples_per_s};
  config.prediction.model_raw_samples_per_s = chosen.samples_per_s;
  config.prediction.interval_because = "the model's spread over seeds (simulation only)";
  config.search = "simulate";
  config.reason = fmt::format("the cheapest config the model predicts within {:g}% of the best predicted throughput "
                              "(simulation only: no trials; a deeper prefetch is kept while its page-locked memory is "
                              "under 1/32 of the budget)", r.tolerance * 100);
  config.pinned_bytes_per_rank = static_cast<std::uint64_t>(chosen.candidate.workers * chosen.candidate.prefetch_factor * w.batch_bytes);
  config.machine.hostname = "profile:" + hw->name;
  config.machine.cpu_model = hw->description;
  config.machine.cpus = hw->cores;
  config.machine.memory_bytes = static_cast<std::uint64_t>(hw->memory_gib * 1073741824.0);
  for (int i = 0; i < hw->gpus; ++i) config.machine.gpus.push_back(hw->gpu_model);
  for (int i = 0; i < node.ranks; ++i) config.ranks.push_back({i, "", std::nullopt, ""});
  config.environment = environment_advice(w, node, chosen.candidate);
  config.workload.target = "simulate";
  config.workload.data = "profile:" + wl->name;
  config.workload.step = fmt::format("{:g} ms ± {:g} ms (profile)", wl->step_mean_ms, wl->step_spread_ms);
  config.workload.sample_bytes = static_cast<std::uint64_t>(wl->decoded_sample_bytes);
  config.workload.ranks = node.ranks;
  rep.line(config.reason);
  if (chosen.starvation > 0.2) {
    rep.line(fmt::format("even this config leaves the step waiting {:.0f}% of the time: per-sample read {:.1f} ms "
                         "(mean) caps {} workers at {:.0f} samples/s; the storage, not the loader config, is the limit "
                         "(a cache tier or packed shards)",
                         chosen.starvation * 100, w.storage.at(1).mean(), chosen.candidate.workers, chosen.bound_samples_per_s));
  }
  write_tune_config(r, ctx, config);
  if (r.emit == "python") ctx.io.out << tune::emit_python(config);
  if (r.out != "-") rep.line("config written to " + r.out);
  return 0;
}

// --from: the step the real job's loop takes between data waits, from a
// diagnosis (evidence.loop_step, docs/diagnose.md).
void apply_diagnosis(TuneRequest& r) {
  if (r.device.step_ms != "0" || !r.device.model.empty()) {
    throw usage_error("--from and --step-ms/--model both give the step", "keep one of them");
  }
  const Json doc = read_json_file(r.from, {"diagnosis", "write one with gpufeed diagnose --json FILE"});
  if (!doc.is_object() || doc.value("schema", "") != "gpufeed.diagnosis/v1") {
    throw usage_error(fmt::format("--from {} is not a gpufeed.diagnosis/v1 document", r.from),
                      "write one with gpufeed diagnose --json FILE");
  }
  const tune::DiagnosisReading reading = tune::read_diagnosis(doc, r.batch_size);
  if (!reading.job) {
    throw usage_error(fmt::format("--from {}: the diagnosis has no step estimate: {}", r.from, reading.error),
                      "diagnose the job while it starves (fewer workers), or give --step-ms");
  }
  const tune::JobFromDiagnosis& job = *reading.job;
  r.device.step_ms = fmt::format("{:.3f}:{:.3f}", job.step_ms, job.spread_ms);
  r.step_source = fmt::format("from {}: {:.2f} ms ± {:.2f} between the loop's data waits over {} cycles{}", r.from,
                              job.step_ms, job.spread_ms, job.cycles,
                              job.step_note.empty() ? "" : " (" + job.step_note + ")");
  r.job_cpu_ms = job.worker_cpu_ms;
  r.loop_cpu_ms_per_sample = job.loop_cpu_ms;
  if (job.stats_per_file >= 0 && r.access == "auto") {
    r.access_from = loader::AccessPattern{job.stats_per_file, std::max(0, job.extra_opens_per_file)};
  }
}

// --metric: how an --exec job's throughput is read. data-wait's tracer
// needs root: said before phase 2 rather than at the first trial.
void check_metric_options(const TuneRequest& r) {
  if (r.metric != "output" && r.metric != "data-wait") {
    throw usage_error(fmt::format("--metric {} is not known", r.metric), "use output or data-wait");
  }
  if (r.metric == "output") return;
  if (r.exec.empty()) {
    throw usage_error("--metric data-wait reads your job's training loop: it needs --exec",
                      "add --exec 'python train.py --workers {num_workers} --prefetch {prefetch_factor}'");
  }
  if (r.metric_regex != TuneRequest{}.metric_regex) {
    throw usage_error("--metric data-wait and --metric-regex both give the job's throughput", "keep one of them");
  }
  if (r.simulate) return;  // no trial runs: nothing to trace
  if (const auto why = JobWaitTrace::unavailable_reason()) {
    throw Error(ErrorKind::Privilege, "--metric data-wait traces the job with eBPF, which is not available: " + *why,
                "run tune as root, or have the job print its throughput and drop --metric");
  }
}

void check_probe_options(const TuneRequest& r) {
  if (!r.python.empty() && !r.pytorch_probe) throw usage_error("--python is only for --pytorch-probe", "add --pytorch-probe or drop --python");
  if (!r.pytorch_probe) return;
  if (!r.exec.empty()) {
    throw usage_error("--pytorch-probe and --exec both price the job", "--exec measures your job itself: drop --pytorch-probe");
  }
  if (!r.from.empty()) {
    throw usage_error("--pytorch-probe and --from both give the job's CPU", "--from measured your job itself: drop --pytorch-probe");
  }
  if (r.work.decode != "jpeg") {
    throw usage_error(fmt::format("--pytorch-probe prices a PIL image pipeline, not --decode {}", r.work.decode),
                      "give --decode jpeg (with the job's --crop, --filter and --image-size)");
  }
}

}  // namespace

int run_tune(const TuneRequest& request, Context& ctx) {
  if (!request.from.empty() && request.step_source.empty()) {
    TuneRequest resolved = request;
    apply_diagnosis(resolved);
    return run_tune(resolved, ctx);
  }
  const TuneRequest& r = request;
  check_probe_options(r);
  check_metric_options(r);
  if (r.out != "-") check_output_path(r.out);
  CliTuneReporter rep(ctx, r.quiet || r.out == "-");  // stdout carries the config then
  if (r.simulate) return run_simulate(r, ctx, rep);
  os::StopOnSignal stop;
  CliTunePlatform platform(ctx);
  app::run_tune_session(r, platform, rep, &stop.flag());
  return 0;
}


}  // namespace gpufeed::cli
