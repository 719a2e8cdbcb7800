// `gpufeed tune`: the five phases, each reported as it runs (docs/tune.md).
#include "tune_session.hpp"

#include <sys/statvfs.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>

#include "gpufeed/atomic_file.hpp"
#include "gpufeed/cpulist.hpp"
#include "gpufeed/input_file.hpp"
#include "gpufeed/loader/basic_steps.hpp"
#include "gpufeed/loader/os_hooks.hpp"
#include "gpufeed/probe/host_inspector.hpp"
#include "gpufeed/probe/hwloc_topology.hpp"
#include "gpufeed/probe_report.hpp"
#include "gpufeed/trace/job_wait_trace.hpp"
#include "gpufeed/tune/calibration.hpp"
#include "gpufeed/tune/cpu_from_trials.hpp"
#include "gpufeed/tune/from_diagnosis.hpp"
#include "gpufeed/tune/job_cpu.hpp"
#include "gpufeed/tune/profile.hpp"
#include "gpufeed/units.hpp"
#include "pytorch_probe.hpp"
#include "tune_measure.hpp"
#include "tune_trials.hpp"

namespace gpufeed::cli {
namespace {

using Clock = std::chrono::steady_clock;
using tune::Candidate;
using tune::Prediction;

// Phase lines go to stdout as they happen; trial progress redraws on a TTY.
class Reporter {
 public:
  Reporter(Context& ctx, bool quiet) : ctx_(ctx), quiet_(quiet) {}
  void phase(int n, const std::string& title) {
    if (!quiet_) ctx_.io.out << ctx_.style.heading(fmt::format("[{}/5] {}", n, title)) << "\n" << std::flush;
  }
  void line(const std::string& text) {
    if (!quiet_) ctx_.io.out << "  " << text << "\n" << std::flush;
  }
  void progress(const std::string& text) {
    if (quiet_ || !ctx_.io.err_is_tty) return;
    ctx_.io.err << "\r\33[2K" << text << std::flush;
    shown_ = true;
  }
  void clear() {
    if (shown_) ctx_.io.err << "\r\33[2K" << std::flush;
    shown_ = false;
  }

 private:
  Context& ctx_;
  bool quiet_;
  bool shown_ = false;
};

// The budget this node gives each rank.
struct NodeBudget {
  int ranks = 1;
  double worker_cores = 1;
  std::uint64_t mem_per_rank = 0;
  std::vector<tune::RankBinding> bindings;
  std::vector<std::vector<int>> rank_cpus;
  tune::MachineFingerprint machine;
  std::vector<std::string> notes;
};

NodeBudget node_budget(const TuneRequest& r, Context& ctx) {
  NodeBudget b;
  ProbeReport probe = probe_this_host(ctx.io);
  const HostInfo host = inspect_host(ctx.io.host);
  b.machine.hostname = host.hostname;
  b.machine.cpu_model = host.cpu_model;
  b.machine.cpus = host.cpus;
  b.machine.kernel = host.kernel;
  b.machine.memory_bytes = probe.topology.total_memory();
  for (const auto* gpu : probe.topology.gpus()) b.machine.gpus.push_back(gpu->bus_id + " " + gpu->model);
  const auto& ranks = probe.budget.ranks;
  b.ranks = r.gpus > 0 ? r.gpus : std::max<int>(1, static_cast<int>(probe.topology.gpus().size()));
  int cores = 0;
  for (int i = 0; i < b.ranks; ++i) {
    tune::RankBinding binding;
    binding.rank = i;
    if (!ranks.empty()) {
      const auto& rb = ranks[static_cast<std::size_t>(i) % ranks.size()];
      binding.gpu = rb.gpu_bus_id;
      binding.numa_node = rb.numa_node;
      binding.worker_cpus = format_cpulist(rb.worker_cpus);
      b.rank_cpus.push_back(rb.worker_cpus);
      if (i < static_cast<int>(ranks.size())) cores += rb.worker_cores;
      if (b.mem_per_rank == 0) b.mem_per_rank = rb.prefetch_bytes;
    }
    b.bindings.push_back(binding);
  }
  const int usable = probe.process ? probe.process->usable_cpus() : b.machine.cpus;
  if (cores < 1) {
    // Too few cores for the budget's reserve: the workers share them all.
    cores = std::max(1, usable);
    b.notes.push_back(fmt::format("the budget leaves no worker cores; the model lets workers share all {} usable CPUs",
                                  cores));
    b.rank_cpus.clear();
  }
  b.worker_cores = cores;
  if (!r.mem_budget.empty()) b.mem_per_rank = parse_size(r.mem_budget, "--mem-budget");
  return b;
}

std::vector<Prediction> predict_all(const tune::Workload& w, const tune::NodeShape& node, const tune::SearchSpace& space,
                                    std::uint64_t mem_per_rank, std::vector<std::string>& excluded) {
  std::vector<Prediction> out;
  for (const auto& c : space.candidates()) {
    const auto pinned = static_cast<std::uint64_t>(c.workers * c.prefetch_factor * w.batch_bytes);
    if (mem_per_rank && pinned > mem_per_rank) {
      excluded.push_back(fmt::format("{} ({} > {} per rank)", tune::describe(c), format_bytes(pinned), format_bytes(mem_per_rank)));
      continue;
    }
    tune::SimOptions o;
    o.steps = 150;
    out.push_back(tune::simulate(w, node, c, o));
  }
  return out;
}

// The preferred prediction within the tolerance of the best prediction.
Prediction best_predicted(const std::vector<Prediction>& predictions, double tolerance, const tune::PrefetchCost& cost) {
  const auto best = *std::max_element(predictions.begin(), predictions.end(),
                                      [](const Prediction& a, const Prediction& b) { return a.samples_per_s < b.samples_per_s; });
  Prediction chosen = best;
  for (const auto& p : predictions) {
    if (p.samples_per_s >= (1 - tolerance) * best.samples_per_s && tune::preferred(p.candidate, chosen.candidate, cost)) {
      chosen = p;
    }
  }
  return chosen;
}

// The spread of the model over seeds: the interval's floor.
std::pair<double, double> seed_interval(const tune::Workload& w, const tune::NodeShape& node, const Candidate& c) {
  double lo = 1e300, hi = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    tune::SimOptions o;
    o.steps = 150;
    o.seed = seed;
    const auto p = tune::simulate(w, node, c, o);
    lo = std::min(lo, p.samples_per_s);
    hi = std::max(hi, p.samples_per_s);
  }
  return {lo, hi};
}

// Memory and SSD cache tiers, advised only when the model predicts a gain.
std::vector<tune::CacheAdvice> cache_advice(const tune::Workload& w, const tune::NodeShape& node, const Candidate& c,
                                            std::uint64_t dataset_bytes, double mean_sample_bytes,
                                            std::uint64_t memory_budget, double baseline) {
  std::vector<tune::CacheAdvice> out;
  if (dataset_bytes == 0 || baseline <= 0) return out;
  auto with_hits = [&](double hit, double hit_ms) {
    tune::Workload cached = w;
    for (auto& level : cached.storage.levels) {
      std::vector<double> mixed;
      const auto& v = level.latency.values();
      for (std::size_t i = 0; i < v.size(); ++i) {
        mixed.push_back((static_cast<double>(i % 100) < hit * 100) ? hit_ms : v[i]);
      }
      level.latency = tune::Distribution(std::move(mixed));
    }
    tune::SimOptions o;
    o.steps = 150;
    return tune::simulate(cached, node, c, o).samples_per_s;
  };
  // A random sampler hits a cache holding a fraction f of the dataset f of the time.
  const std::uint64_t mem_bytes = std::min<std::uint64_t>(dataset_bytes, memory_budget);
  if (mem_bytes > 0) {
    const double share = static_cast<double>(mem_bytes) / static_cast<double>(dataset_bytes);
    const double gain = with_hits(share, 0.02) / baseline;
    if (gain >= 1.10) {
      out.push_back({"memory", mem_bytes, static_cast<std::uint64_t>(static_cast<double>(mem_bytes) / std::max(1.0, mean_sample_bytes)),
                     share, gain,
                     fmt::format("the store's read latency (measured) dominates; a {} memory tier holds {:.0f}% of the "
                                 "dataset and the model predicts {:.2f}x samples/s from the second epoch on",
                                 format_bytes(mem_bytes), share * 100, gain)});
    }
  }
  struct statvfs fs {};
  std::uint64_t disk_free = 0;
  if (statvfs(std::filesystem::temp_directory_path().c_str(), &fs) == 0) {
    disk_free = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
  }
  const std::uint64_t ssd_bytes = std::min<std::uint64_t>(dataset_bytes, disk_free / 2);
  if (ssd_bytes > 0) {
    const double share = static_cast<double>(ssd_bytes) / static_cast<double>(dataset_bytes);
    const double gain = with_hits(share, 0.15) / baseline;
    if (gain >= 1.10) {
      out.push_back({"ssd", ssd_bytes, 0, share, gain,
                     fmt::format("a local SSD tier ({} free on {}) can hold {:.0f}% of the dataset; the model predicts "
                                 "{:.2f}x samples/s from the second epoch on",
                                 format_bytes(disk_free), std::filesystem::temp_directory_path().string(), share * 100, gain)});
    }
  }
  return out;
}

std::vector<tune::EnvAdvice> environment_advice(const tune::Workload& w, const tune::NodeShape& node, const Candidate& c) {
  std::vector<tune::EnvAdvice> out;
  const double cpu = w.cpu_ms.mean();
  const double fetch = w.storage.at(1).mean();
  if (cpu > 0 && cpu >= fetch && c.workers * node.ranks >= node.worker_cores) {
    out.push_back({"OMP_NUM_THREADS", "1",
                   fmt::format("measured {:.2f} ms of CPU per sample against {:.2f} ms of fetch: the workers are CPU-bound, "
                               "and {} workers x {} ranks fill the {:.0f} worker cores, so intra-op threads in workers "
                               "would only oversubscribe them",
                               cpu, fetch, c.workers, node.ranks, node.worker_cores)});
  }
  return out;
}

void write_config(const TuneRequest& r, Context& ctx, const tune::TunedConfig& config) {
  const HostInfo host = inspect_host(ctx.io.host);
  const Json doc = make_document("config", host, tune::to_json(config), ctx.io.now());
  if (r.out == "-") {
    ctx.io.out << dump_json(doc, 2) << "\n";
  } else {
    ctx.io.out.flush();  // the report so far comes first when --out is /dev/stdout
    write_output(r.out, dump_json(doc, 2) + "\n");
  }
}

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

int run_simulate(const TuneRequest& r, Context& ctx, Reporter& rep) {
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
  const int max_workers =
      r.max_workers > 0 ? r.max_workers : std::clamp(static_cast<int>(std::lround(node.worker_cores / node.ranks * 4)), 1, 32);
  const auto space = tune::default_space(max_workers, r.both_pin);
  const std::uint64_t mem = static_cast<std::uint64_t>(hw->memory_gib * 0.25 / hw->gpus * 1073741824.0);
  std::vector<std::string> excluded;
  const auto predictions = predict_all(w, node, space, mem, excluded);
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
  write_config(r, ctx, config);
  if (r.emit == "python") ctx.io.out << tune::emit_python(config);
  if (r.out != "-") rep.line("config written to " + r.out);
  return 0;
}

// What the model's figure describes, for the report's "predicted" line.
std::string model_source(const TuneRequest& r, const tune::PredictionBand& p, const tune::Calibration& cal) {
  if (!r.exec.empty()) return fmt::format("raw {:.0f}; calibrated {}", p.model_raw_samples_per_s, cal.describe());
  if (!r.from.empty()) return "the built-in loader with the job's measured CPU and step, from --from";
  if (r.pytorch_probe) {
    return "the built-in loader with a stock PyTorch pipeline's CPU per sample (its ratio to the built-in decode from "
           "--pytorch-probe, the CPU the trials spent at that ratio) and per batch";
  }
  // A Python job pays its interpreter, collate and IPC per sample on top of
  // the built-in transform: on bench/tune_incident.py's local PIL job the
  // built-in model was 27-41% above the job (--from: -5% to +20%).
  return "the built-in loader's; a Python job is slower per sample: tune with --pytorch-probe (a PIL image job), "
         "--from a diagnosis of it, or --exec";
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
}

// What a sample costs the job's workers beyond the built-in transform, when
// a diagnosis or the PyTorch probe says so: the model's CPU distribution is
// shifted by it and the built-in trials spend it, so model and trials both
// describe the job.
double extra_cpu_ms(double job_cpu_ms, double transform_ms) {
  return job_cpu_ms > transform_ms ? job_cpu_ms - transform_ms : 0.0;
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
  if (request.batch_size < 1) throw usage_error("--batch-size must be at least 1");
  if (!request.from.empty() && request.step_source.empty()) {
    TuneRequest resolved = request;
    apply_diagnosis(resolved);
    return run_tune(resolved, ctx);
  }
  const TuneRequest& r = request;
  check_probe_options(r);
  check_metric_options(r);
  if (r.out != "-") check_output_path(r.out);
  Reporter rep(ctx, r.quiet || r.out == "-");  // stdout carries the config then
  if (r.simulate) return run_simulate(r, ctx, rep);

  const auto started = Clock::now();
  loader::StopOnSignal stop;

  // A dataset that cannot be opened fails before any phase runs.
  if (r.data.data.empty()) {
    throw usage_error("--data is required: tune measures the dataset's storage and per-sample cost",
                      "give the dataset the job reads (directory, manifest, s3://..., synthetic:...)");
  }
  auto source = open_data(r.data, ctx.io);

  // 1. Budget.
  NodeBudget budget = node_budget(r, ctx);
  rep.phase(1, "budget");
  rep.line(fmt::format("{} rank{}, {:.0f} worker cores on the node, {} of page-locked memory per rank", budget.ranks,
                       budget.ranks > 1 ? "s" : "", budget.worker_cores, format_bytes(budget.mem_per_rank)));
  for (const auto& n : budget.notes) rep.line("note: " + n);
  const double cores_per_rank = budget.worker_cores / budget.ranks;
  // Workers that wait on storage sleep, so up to 4 per core are tried (and
  // `check` accepts no more: docs/tune.md).
  const int max_workers = r.max_workers > 0 ? r.max_workers
                                            : std::clamp(static_cast<int>(std::lround(cores_per_rank * 4)), 1, 32);
  auto space = tune::default_space(max_workers, r.both_pin);
  // A CPU-trained job copies nothing to a device: pinning only costs.
  if (parse_device(r.device.device) == loader::DeviceChoice::Cpu) space.pin_memory = {false};
  if (r.max_workers > 0 && r.max_workers > std::lround(cores_per_rank * 4)) {
    rep.line(fmt::format("note: --max-workers {} is more than 4 per worker core ({:.0f}): gpufeed check on this "
                         "machine will refuse a config that uses them",
                         r.max_workers, cores_per_rank * 4));
  }

  // 2. Measure.
  rep.phase(2, "measure");
  const auto samples = list_data(*source, ctx.io, r.quiet);
  auto transform = make_transform(r.work, samples);
  std::unique_ptr<loader::StepRunner> model_step;
  if (!r.device.model.empty()) model_step = make_step(r.device, 1);
  MeasureRequest mr;
  mr.source = source.get();
  mr.samples = &samples;
  mr.transform = transform.get();
  mr.step = model_step.get();
  if (!model_step) mr.step_ms = step_distribution_from(r.device.step_ms);
  mr.batch_size = r.batch_size;
  mr.max_concurrency = budget.ranks * space.workers.back();
  mr.seconds_per_level = r.measure_level_s;
  mr.stop = &stop.flag();
  mr.progress = [&](const std::string& s) { rep.line(s); };
  rep.line(fmt::format("{}: {} samples, {}", source->describe(), samples.size(),
                       format_bytes(std::accumulate(samples.begin(), samples.end(), std::uint64_t{0},
                                                    [](std::uint64_t a, const loader::SampleInfo& s) { return a + s.size; }))));
  Measured m = measure_for_tune(mr);
  // Ctrl-C in phase 2: nothing is measured whole, so no model is worth simulating.
  if (stop.flag().load()) throw runtime_error("tune was interrupted while measuring: no config written");
  const double transform_cpu_ms = m.cpu_mean_ms;
  double job_cpu_ms = r.job_cpu_ms;
  std::string job_cpu_source = r.from;
  // The loop's CPU per batch is part of the step the diagnosis measured
  // between waits: the model runs it on the shared cores, then the rest.
  double loop_cpu_ms = 0;
  std::string trial_step_ms = r.device.model.empty() ? r.device.step_ms : fmt::format("{:.3f}", m.step_mean_ms);
  std::optional<tune::PytorchCosts> pytorch;  // --pytorch-probe: the model describes that pipeline
  if (r.pytorch_probe) {
    // As many busy workers as the job's workers have cores (at most 8): a
    // sample then costs what it does in a job whose workers keep up.
    const int busy = std::clamp(static_cast<int>(std::lround(budget.worker_cores)), 1, 8);
    rep.line(fmt::format("PyTorch probe: {} DataLoader worker{} decoding 64 of the dataset's images with {} ...", busy,
                         busy == 1 ? "" : "s", r.python.empty() ? default_python() : r.python));
    PytorchProbeRequest pr;
    pr.workers = busy;
    pr.source = source.get();
    pr.samples = &samples;
    pr.python = r.python;
    pr.batch_size = r.batch_size;
    pr.image_size = r.work.image_size;
    pr.crop = r.work.crop;
    pr.filter = r.work.filter;
    pr.transform = transform.get();
    pr.stop = &stop.flag();
    const tune::PytorchCosts costs = probe_pytorch(pr, ctx.io);
    pytorch = costs;
    rep.line(fmt::format("PyTorch ({}; {}): {:.2f} ms of CPU per sample in the workers, {:.2f} ms per batch in the loop",
                         costs.pipeline, costs.versions, costs.worker_cpu_ms, costs.loop_cpu_ms_per_batch));
    if (costs.builtin_cpu_ms > 0) {
      rep.line(fmt::format("the built-in transform on {} thread{}, in turns with it: {:.2f} ms per sample -> the pipeline "
                           "costs x{:.2f} of it",
                           busy, busy == 1 ? "" : "s", costs.builtin_cpu_ms,
                           tune::pytorch_ratio(costs, m.cpu_mean_ms)));
    }
    job_cpu_ms = costs.worker_cpu_ms;
    job_cpu_source = "--pytorch-probe";
    // The step given is the training step; a PyTorch loop also receives
    // each batch before it, on the cores the workers use.
    loop_cpu_ms = costs.loop_cpu_ms_per_batch;
    if (loop_cpu_ms > 0) {
      m.workload.loop_cpu_ms = tune::Distribution::constant(loop_cpu_ms);
      rep.line(fmt::format("loop CPU per batch: {:.2f} ms before each step (--pytorch-probe): it shares the cores with "
                           "the workers, and the trials' loop spins it",
                           loop_cpu_ms));
    }
  }
  if (r.loop_cpu_ms_per_sample > 0) {
    const auto t = loader::parse_step_time(r.device.step_ms);
    loop_cpu_ms = std::min(r.loop_cpu_ms_per_sample * r.batch_size, 0.9 * t.mean_ms);
    m.workload.loop_cpu_ms = tune::Distribution::constant(loop_cpu_ms);
    m.workload.step_ms = tune::step_distribution(t.mean_ms - loop_cpu_ms, t.spread_ms);
    // The trials' loop spins that CPU (BuiltinTrialSetup::step_cpu_ms), then sleeps the rest.
    trial_step_ms = fmt::format("{:.3f}:{:.3f}", t.mean_ms - loop_cpu_ms, t.spread_ms);
    rep.line(fmt::format("loop CPU per batch: {:.2f} ms of the {:.2f} ms step ({}): it shares the cores with the workers",
                         loop_cpu_ms, t.mean_ms, r.from));
  }
  double pytorch_ratio = 1, trial_scale = 1;  // --pytorch-probe: the pipeline per built-in ms; the trials' factor
  if (pytorch) {
    // Until the trials have run, the model takes the probe's cost as it is
    // (its workers all busy, as the model's busiest case: no further
    // slowdown). The trials pay the pipeline's ratio to the built-in decode
    // on every sample, so they rank configs at about the job's cost, and
    // their CPU over the whole search then prices the model (below).
    pytorch_ratio = tune::pytorch_ratio(*pytorch, m.cpu_mean_ms);
    trial_scale = tune::trial_cpu_scale(pytorch_ratio);
    rep.line(fmt::format("CPU per sample: the model takes the PyTorch pipeline's {:.2f} ms until the trials have run "
                         "(phase 2's built-in transform: {:.3f} ms); {}",
                         job_cpu_ms, m.cpu_mean_ms,
                         trial_scale > 1 ? fmt::format("the trials scale each sample's CPU by x{:.2f}", trial_scale)
                                         : fmt::format("the pipeline is the cheaper (x{:.2f}): the trials run the "
                                                       "built-in transform as it is",
                                                       pytorch_ratio)));
    m.workload.cpu_ms = m.cpu_mean_ms > 0 ? m.workload.cpu_ms.scaled(job_cpu_ms / m.cpu_mean_ms)
                                          : tune::Distribution::constant(job_cpu_ms);
    m.workload.cpu_slowdown_all_cores = 1;
    m.cpu_mean_ms = m.workload.cpu_ms.mean();
    transform = loader::with_cpu_scale(std::move(transform), trial_scale);
  } else if (const double extra = extra_cpu_ms(job_cpu_ms, m.cpu_mean_ms); extra > 0) {
    rep.line(fmt::format("CPU per sample: the job's workers spent {:.2f} ms ({}), the built-in transform {:.3f} ms: the "
                         "model and the trials add {:.2f} ms",
                         job_cpu_ms, job_cpu_source, m.cpu_mean_ms, extra));
    std::vector<double> shifted = m.workload.cpu_ms.values();
    for (auto& v : shifted) v += extra;
    m.workload.cpu_ms = tune::Distribution(std::move(shifted));
    m.cpu_mean_ms = m.workload.cpu_ms.mean();
    transform = loader::with_extra_cpu(std::move(transform), extra * 1e3);
  }
  rep.line(fmt::format("step: mean {:.2f} ms{}; memcpy {:.1f} GB/s", m.step_mean_ms,
                       r.step_source.empty() ? "" : " (" + r.step_source + ")", m.memcpy_gb_per_s));

  // 3. Model.
  const tune::NodeShape node{budget.ranks, budget.worker_cores};
  std::vector<std::string> excluded;
  auto predictions = predict_all(m.workload, node, space, budget.mem_per_rank, excluded);
  if (predictions.empty()) {
    throw usage_error(fmt::format("no candidate fits the page-locked memory budget of {} per rank", format_bytes(budget.mem_per_rank)),
                      "lower --batch-size or raise --mem-budget");
  }
  rep.phase(3, fmt::format("model: {} candidates simulated", predictions.size()));
  for (const auto& e : excluded) rep.line("excluded (memory): " + e);
  {
    auto ranked = predictions;
    std::sort(ranked.begin(), ranked.end(), [](const Prediction& a, const Prediction& b) { return a.samples_per_s > b.samples_per_s; });
    for (std::size_t i = 0; i < std::min<std::size_t>(5, ranked.size()); ++i) {
      rep.line(fmt::format("{:<32} {:8.0f} samples/s per rank, starvation {:3.0f}% (bound {:.0f})",
                           tune::describe(ranked[i].candidate), ranked[i].samples_per_s, ranked[i].starvation * 100,
                           ranked[i].bound_samples_per_s));
    }
  }

  // 4. Verify.
  rep.phase(4, fmt::format("verify: {} search, {} target", r.search, r.exec.empty() ? "built-in loader" : "your job"));
  std::unique_ptr<tune::TrialRunner> runner;
  const ExecTrialRunner* exec_runner = nullptr;  // for the step its trials timed
  if (!r.exec.empty()) {
    auto exec = std::make_unique<ExecTrialRunner>(
        ExecTrialSetup{r.exec, r.metric_regex, r.batch_size, &stop.flag(), budget.ranks, r.trial_s,
                       r.metric == "data-wait", m.step_mean_ms});
    exec_runner = exec.get();
    runner = std::move(exec);
  } else {
    BuiltinTrialSetup setup;
    setup.source = source.get();
    setup.samples = &samples;
    setup.transform = transform.get();
    setup.device = parse_device(r.device.device);
    setup.step_ms = trial_step_ms;
    setup.step_cpu_ms = loop_cpu_ms;
    setup.ranks = budget.ranks;
    setup.batch_size = r.batch_size;
    if (r.bind) setup.rank_cpus = budget.rank_cpus;
    setup.stop = &stop.flag();
    runner = std::make_unique<BuiltinTrialRunner>(setup);
  }
  tune::SearchOptions so;
  so.tolerance = r.tolerance;
  so.trial_seconds = r.trial_s;
  so.first_round_seconds = std::min(r.first_round_s, r.trial_s);
  so.prefetch_cost = {m.workload.batch_bytes, tune::free_prefetch_bytes(static_cast<double>(budget.mem_per_rank))};
  so.stop = &stop.flag();
  // The built-in loader starts at once: its short-to-full gap is the
  // machine's noise alone (±10% between paired runs on this project's VM,
  // bench/README.md), where a job's also holds its start-up.
  if (r.exec.empty()) so.noise_cap = std::max(0.10, 2 * r.tolerance);
  // A job's trials read its own CPU (its workers' per sample, its loop's
  // per batch: job_cpu.hpp), which phase 2's built-in measurement cannot
  // see: the search's later picks and its choice use the model refitted to them.
  struct JobFit {
    tune::CpuFromTrials cpu;
    double loop_ms = 0;
    tune::Workload workload;
  };
  auto job_fit = [&](const std::vector<tune::Trial>& trials) -> std::optional<JobFit> {
    JobFit f;
    f.cpu = tune::job_cpu_from_trials(trials, node);
    // A diagnosis already split its loop's CPU from the step (above).
    f.loop_ms = r.loop_cpu_ms_per_sample > 0 ? 0 : tune::loop_cpu_from_trials(trials);
    if (!f.cpu.used && f.loop_ms <= 0) return std::nullopt;
    f.workload = tune::with_job_cpu(m.workload, f.cpu);
    if (f.loop_ms > 0) f.workload.loop_cpu_ms = tune::Distribution::constant(f.loop_ms);
    return f;
  };
  // The built-in target's CPU per sample from its trials, which time every
  // sample they build: the line through the trials within the cores; with
  // --pytorch-probe the CPU time of every all-busy trial (most of the
  // search) when there is one, at the pipeline's ratio.
  auto builtin_cpu = [&](const std::vector<tune::Trial>& trials) {
    if (!pytorch) return tune::cpu_from_trials(trials, node);
    const auto busy = tune::cpu_time_from_trials(trials, node);
    return tune::pytorch_cpu_from_trials(busy.used ? busy : tune::cpu_from_trials(trials, node), pytorch_ratio,
                                         trial_scale);
  };
  if (!r.exec.empty()) {
    so.refit = [&](const std::vector<tune::Trial>& trials) {
      const auto f = job_fit(trials);
      std::vector<std::string> ignored;  // the same candidates fit the budget as before
      return f ? predict_all(f->workload, node, space, budget.mem_per_rank, ignored) : std::vector<Prediction>{};
    };
  } else {
    // The model with the trials' CPU breaks the ties their noise leaves
    // (choose()), as for a job.
    so.refit = [&](const std::vector<tune::Trial>& trials) {
      const auto f = builtin_cpu(trials);
      std::vector<std::string> ignored;
      return f.used ? predict_all(tune::with_cpu_from_trials(m.workload, f), node, space, budget.mem_per_rank, ignored)
                    : std::vector<Prediction>{};
    };
  }
  if (r.budget_s > 0) {
    so.budget_seconds = std::max(0.0, r.budget_s - std::chrono::duration<double>(Clock::now() - started).count());
  }
  so.on_trial = [&](const tune::Trial& t, const std::optional<tune::Trial>& best) {
    rep.clear();
    rep.line(fmt::format("{} {:<32} {}", t.round == 1 ? "short" : "full ", tune::describe(t.candidate),
                         !t.ok            ? "failed: " + t.note
                         : r.exec.empty() ? fmt::format("{:8.0f} samples/s, starvation {:3.0f}%", t.samples_per_s,
                                                        t.starvation * 100)
                                          : fmt::format("{:8.0f} samples/s{}", t.samples_per_s,  // a job's metric: no starvation
                                                        t.note.empty() ? "" : " (" + t.note + ")")));
    if (best) rep.progress(fmt::format("best so far: {} at {:.0f} samples/s", tune::describe(best->candidate), best->samples_per_s));
  };
  const tune::SearchResult result = r.search == "grid" ? tune::grid_search(space, *runner, so)
                                                       : tune::model_search(predictions, space, *runner, so);
  rep.clear();
  if (!result.choice) {
    if (stop.flag().load()) throw runtime_error("tune was interrupted before any trial finished: no config written");
    std::string why = "every trial failed";
    for (const auto& t : result.trials) {
      if (!t.ok) {
        why += ": " + t.note;
        break;
      }
    }
    throw runtime_error(why, r.exec.empty() ? "run gpufeed bench with one of the configs to see why"
                                            : "run the --exec command by hand to see why");
  }

  // 5. Choose.
  const auto& choice = *result.choice;
  const Candidate chosen = choice.chosen.candidate;
  rep.phase(5, "choose");
  rep.line(choice.reason);
  // Phase 2 timed the transform for under a second; the built-in trials
  // timed every sample they built, over the whole search: the model's final
  // figures (prediction, each trial's model figure, the advice) use theirs.
  if (!r.exec.empty()) {
    // The search refitted the model to every trial for its choice: the same
    // fit, and its predictions, serve the figures below.
    if (const auto f = job_fit(result.trials); f && !result.refitted.empty()) {
      rep.line(fmt::format("your job's CPU in the trials: its workers {}, its loop {}; the model's figures below use it "
                           "(phase 2 measured the built-in transform at {:.3f} ms per sample)",
                           f->cpu.used ? f->cpu.describe() : "not measured",
                           f->loop_ms > 0 ? fmt::format("{:.2f} ms per batch on the shared cores", f->loop_ms)
                                          : std::string(r.loop_cpu_ms_per_sample > 0 ? "as the diagnosis measured"
                                                                                     : "not measured"),
                           m.cpu_mean_ms));
      m.workload = f->workload;
      m.cpu_mean_ms = m.workload.cpu_ms.mean();
      predictions = result.refitted;
    }
  } else if (const auto from_trials = builtin_cpu(result.trials); from_trials.used) {
    rep.line(pytorch ? fmt::format("CPU per sample in the trials, at the PyTorch pipeline's x{:.2f} (they ran the "
                                   "built-in decode x{:.2f}): {}; the model's figures below use it (the probe read "
                                   "{:.2f} ms in its seconds)",
                                   pytorch_ratio, trial_scale, from_trials.describe(), pytorch->worker_cpu_ms)
                     : fmt::format("CPU per sample in the trials: {} (phase 2 measured {:.3f} ms); the model's figures "
                                   "below use it",
                                   from_trials.describe(), m.cpu_mean_ms));
    m.workload = tune::with_cpu_from_trials(m.workload, from_trials);
    m.cpu_mean_ms = m.workload.cpu_ms.mean();
    std::vector<std::string> ignored;  // the same candidates fit the budget as before
    predictions = predict_all(m.workload, node, space, budget.mem_per_rank, ignored);
  }
  Prediction model_of_chosen{};
  for (const auto& p : predictions) {
    if (p.candidate == chosen) model_of_chosen = p;
  }
  if (model_of_chosen.samples_per_s == 0) {
    tune::SimOptions o;
    o.steps = 150;
    model_of_chosen = tune::simulate(m.workload, node, chosen, o);
  }
  tune::TunedConfig config;
  config.batch_size = r.batch_size;
  config.chosen = chosen;
  config.ranks = budget.bindings;
  config.trials = result.trials;
  config.search = r.search;
  config.search_wall_s = std::chrono::duration<double>(Clock::now() - started).count();
  config.grid_equivalent_s = static_cast<double>(space.candidates().size()) * r.trial_s;
  config.reason = choice.reason;
  config.partial = result.stopped_early;
  config.machine = budget.machine;
  config.pinned_bytes_per_rank = static_cast<std::uint64_t>(chosen.workers * chosen.prefetch_factor * m.workload.batch_bytes);
  // The prediction is the chosen config's full trial on this machine; the
  // interval covers the model's spread over seeds, its error on the trials
  // and the trials' own noise.
  std::vector<double> errors;
  for (const auto& t : result.trials) {
    if (!t.ok || t.samples_per_s <= 0) continue;
    for (const auto& p : predictions) {
      if (p.candidate == t.candidate && p.samples_per_s > 0) errors.push_back(std::abs(p.samples_per_s / t.samples_per_s - 1));
    }
  }
  std::sort(errors.begin(), errors.end());
  const double model_error = errors.empty() ? 0.1 : errors[errors.size() / 2];
  const auto [seed_lo, seed_hi] = seed_interval(m.workload, node, chosen);
  const double measured = choice.chosen.samples_per_s;
  const auto width = tune::interval_width(model_error, (seed_hi - seed_lo) / std::max(1.0, 2 * model_of_chosen.samples_per_s),
                                         tune::repeat_spread(result.trials));
  const double half = width.half;
  // For --exec, the model calibrated to the other configs' trials
  // (leave-one-out, so the chosen config's own trial does not grade itself).
  tune::SimOptions cal_options;
  cal_options.steps = 150;
  // Only the user's job differs from what phase 2 measured (its Python, its
  // IPC, its own step): the built-in loader ran those measurements, and its
  // raw model comes within a few percent of its full trial (bench/README.md),
  // where factors fitted to three or four short trials only add their noise.
  tune::Calibration cal;
  cal.samples_per_s = model_of_chosen.samples_per_s;
  if (!r.exec.empty()) cal = tune::calibrate(m.workload, node, result.trials, chosen, cal_options);
  const double model_scaled = cal.samples_per_s;  // the raw simulation when no other trial succeeded
  config.prediction = {measured, measured * std::max(0.0, 1 - half), measured * (1 + half), measured * budget.ranks,
                       choice.chosen.starvation, model_scaled};
  config.prediction.model_raw_samples_per_s = model_of_chosen.samples_per_s;
  config.prediction.interval_because = width.because;
  config.prediction.sample_factor = cal.sample_factor;
  config.prediction.step_factor = cal.step_factor;
  config.prediction.calibration_trials = cal.trials_used;
  // Each trial beside the raw model's figure for its config: the model's
  // error, trial by trial, for whoever reads the config.
  for (auto& t : config.trials) {
    for (const auto& p : predictions) {
      if (p.candidate == t.candidate) t.model_samples_per_s = p.samples_per_s;
    }
  }
  config.environment = environment_advice(m.workload, node, chosen);
  config.cache = cache_advice(m.workload, node, chosen, m.dataset_bytes, m.mean_sample_bytes, budget.mem_per_rank,
                              model_of_chosen.samples_per_s);
  config.workload.target = r.exec.empty() ? "loader" : "exec";
  config.workload.data = r.data.data;
  config.workload.exec = r.exec;
  if (!r.exec.empty()) {
    config.workload.metric = r.metric;
    if (r.metric == "output") config.workload.metric_regex = r.metric_regex;
    if (r.metric == "data-wait" && exec_runner) config.workload.data_wait_step_ms = exec_runner->known_step_ms();
  }
  config.workload.step = model_step            ? model_step->describe()
                         : !r.step_source.empty() ? "step " + r.step_source
                                                  : fmt::format("simulated step {} ms", r.device.step_ms);
  if (r.pytorch_probe && loop_cpu_ms > 0) {
    config.workload.step += fmt::format(", after {:.2f} ms of loop CPU per batch (--pytorch-probe)", loop_cpu_ms);
  }
  // What the trials ran, so check re-measures the same: the loop's CPU (from
  // a diagnosis) spun, then the rest of the step slept.
  config.workload.step_ms = trial_step_ms;
  config.workload.step_cpu_ms = loop_cpu_ms;
  config.workload.decode = r.work.decode;
  config.workload.full_decode = r.work.full_decode;
  config.workload.filter = r.work.filter;
  config.workload.crop = r.work.crop;
  // Check pays what the trials paid: a job's CPU on top, or the pipeline's ratio.
  config.workload.cpu_us = r.work.cpu_us + (pytorch ? 0.0 : extra_cpu_ms(job_cpu_ms, transform_cpu_ms) * 1e3);
  config.workload.cpu_scale = trial_scale;
  config.workload.image_size = r.work.image_size;
  config.workload.sample_bytes = transform->output_bytes();
  config.workload.ranks = budget.ranks;

  rep.line(fmt::format("predicted {:.0f} samples/s per rank (interval {:.0f}-{:.0f}: {}); the model says {:.0f} ({})",
                       config.prediction.samples_per_s, config.prediction.low, config.prediction.high,
                       config.prediction.interval_because,
                       config.prediction.model_samples_per_s,
                       model_source(r, config.prediction, cal)));
  for (const auto& e : config.environment) rep.line(fmt::format("set {}={}: {}", e.name, e.value, e.because));
  for (const auto& a : config.cache) rep.line(fmt::format("cache ({}): {}", a.tier, a.because));
  rep.line(fmt::format("{} trials in {:.0f} s (a grid of full trials over the same {} configs: {:.0f} s)",
                       result.trials.size(), config.search_wall_s, space.candidates().size(), config.grid_equivalent_s));
  if (result.stopped_early) rep.line("stopped early (Ctrl-C or --budget): this is the best config found so far");
  write_config(r, ctx, config);
  if (r.emit == "python") ctx.io.out << tune::emit_python(config);
  if (r.out != "-") rep.line("config written to " + r.out);
  return 0;
}

}  // namespace gpufeed::cli
