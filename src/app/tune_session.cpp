// `gpufeed tune`'s session: the five phases, each reported as it runs
// (docs/tune.md), on the machine the platform port gives.
#include "gpufeed/app/tune_session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "gpufeed/error.hpp"
#include "gpufeed/loader/basic_steps.hpp"
#include "gpufeed/tune/calibration.hpp"
#include "gpufeed/tune/cpu_from_trials.hpp"
#include "gpufeed/tune/job_cpu.hpp"
#include "gpufeed/tune/profile.hpp"
#include "gpufeed/units.hpp"

namespace gpufeed::app {
namespace {

using tune::cache_advice;
using tune::Candidate;
using tune::environment_advice;
using tune::predict_all;
using tune::Prediction;
using tune::seed_interval;

bool stopped(const std::atomic<bool>* stop) { return stop && stop->load(); }

// The space with every worker count a trial ran (the search grows past the
// space's edge): the model then has a figure for each.
tune::SearchSpace with_tried(tune::SearchSpace space, const std::vector<tune::Trial>& trials) {
  for (const auto& t : trials) {
    if (std::find(space.workers.begin(), space.workers.end(), t.candidate.workers) == space.workers.end()) {
      space.workers.push_back(t.candidate.workers);
    }
  }
  std::sort(space.workers.begin(), space.workers.end());
  return space;
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

// What a sample costs the job's workers beyond the built-in transform, when
// a diagnosis or the PyTorch probe says so: the model's CPU distribution is
// shifted by it and the built-in trials spend it, so model and trials both
// describe the job.
double extra_cpu_ms(double job_cpu_ms, double transform_ms) {
  return job_cpu_ms > transform_ms ? job_cpu_ms - transform_ms : 0.0;
}

// One tune: its phases, in order (run()), and what they hand on to each
// other. Each phase reads the request and what the phases before it found.
class Session {
 public:
  Session(const TuneRequest& request, TunePlatform& p, TuneReporter& reporter, const std::atomic<bool>* stop_flag)
      : r(request), platform(p), rep(reporter), stop(stop_flag) {}
  tune::TunedConfig run();

 private:
  void budget_phase();
  void measure_phase();
  void probe_pytorch_costs();
  void price_job_cpu();
  void model_phase();
  tune::SearchOptions search_options();
  void verify_phase();
  void refit_to_trials();
  void record_workload(tune::TunedConfig& config) const;
  tune::TunedConfig choose_phase();
  tune::Interval chosen_interval(const Candidate& chosen, double model_error);
  double grid_equivalent_seconds() const;
  struct JobFit {
    tune::CpuFromTrials cpu;
    double loop_ms = 0;
    tune::Workload workload;
  };
  std::optional<JobFit> job_fit(const std::vector<tune::Trial>& trials) const;
  tune::CpuFromTrials builtin_cpu(const std::vector<tune::Trial>& trials) const;

  const TuneRequest& r;
  TunePlatform& platform;
  TuneReporter& rep;
  const std::atomic<bool>* stop;
  double started = 0;  // on the platform's clock
  std::unique_ptr<loader::SampleSource> source;
  TuneBudget budget;                                 // phase 1
  tune::SearchSpace space;
  tune::WorkerCapInputs cap_inputs;
  tune::WorkerCap cap;                               // the most workers the space may grow to
  loader::AccessPattern access;                      // what the job calls per sample
  std::vector<loader::SampleInfo> samples;           // phase 2
  std::unique_ptr<loader::SampleTransform> transform;
  std::unique_ptr<loader::StepRunner> model_step;
  Measured m;
  double transform_cpu_ms = 0;   // the built-in transform alone, as phase 2 timed it
  double job_cpu_ms = 0;         // the job's workers' CPU per sample, where known (--from, --pytorch-probe)
  std::string job_cpu_source;
  // The loop's CPU per batch is part of the step the diagnosis measured
  // between waits: the model runs it on the shared cores, then the rest.
  double loop_cpu_ms = 0;
  std::string trial_step_ms;
  std::optional<tune::PytorchCosts> pytorch;  // --pytorch-probe: the model describes that pipeline
  double pytorch_ratio = 1, trial_scale = 1;  // --pytorch-probe: the pipeline per built-in ms; the trials' factor
  tune::NodeShape node;                              // phase 3
  std::vector<Prediction> predictions;
  std::unique_ptr<tune::TrialRunner> runner;         // phase 4
  const JobTrialRunner* exec_runner = nullptr;       // for the step its trials timed
  tune::SearchResult result;
};

// A job's trials read its own CPU (its workers' per sample, its loop's
// per batch: job_cpu.hpp), which phase 2's built-in measurement cannot
// see: the search's later picks and its choice use the model refitted to them.
std::optional<Session::JobFit> Session::job_fit(const std::vector<tune::Trial>& trials) const {
  Session::JobFit f;
  f.cpu = tune::job_cpu_from_trials(trials, node);
  // A diagnosis already split its loop's CPU from the step (above).
  f.loop_ms = r.loop_cpu_ms_per_sample > 0 ? 0 : tune::loop_cpu_from_trials(trials);
  if (!f.cpu.used && f.loop_ms <= 0) return std::nullopt;
  f.workload = tune::with_job_cpu(m.workload, f.cpu);
  if (f.loop_ms > 0) f.workload.loop_cpu_ms = tune::Distribution::constant(f.loop_ms);
  return f;
}
// The built-in target's CPU per sample from its trials, which time every
// sample they build: the line through the trials within the cores; with
// --pytorch-probe the CPU time of every all-busy trial (most of the
// search) when there is one, at the pipeline's ratio.
tune::CpuFromTrials Session::builtin_cpu(const std::vector<tune::Trial>& trials) const {
  if (!pytorch) return tune::cpu_from_trials(trials, node);
  const auto busy = tune::cpu_time_from_trials(trials, node);
  return tune::pytorch_cpu_from_trials(busy.used ? busy : tune::cpu_from_trials(trials, node), pytorch_ratio,
                                       trial_scale);
}

// 1. What the node gives each rank, and the space of candidates it allows.
void Session::budget_phase() {
  (void)stop;
  budget = platform.budget(r);
  rep.phase(1, "budget");
  rep.line(fmt::format("{} rank{}, {:.0f} worker cores on the node, {} of page-locked memory per rank", budget.ranks,
                       budget.ranks > 1 ? "s" : "", budget.worker_cores, format_bytes(budget.mem_per_rank)));
  for (const auto& n : budget.notes) rep.line("note: " + n);
  const double cores_per_rank = budget.worker_cores / budget.ranks;
  // What caps the workers before the batch size is priced: --max-workers,
  // the memory a worker needs, the open-file limit (model_phase adds the
  // page-locked budget). Workers that wait on storage sleep: the space
  // starts at 4 per core and grows past it while the workers are I/O-bound.
  cap_inputs.user_max = r.max_workers;
  cap_inputs.mem_available = budget.mem_available / static_cast<std::uint64_t>(std::max(1, 2 * budget.ranks));
  // A thread of the built-in loader costs its stack and scratch; a forked
  // PyTorch worker its own pages (the interpreter's copied-on-write heap).
  cap_inputs.bytes_per_worker = r.exec.empty() ? 4ULL << 20 : 64ULL << 20;
  cap_inputs.open_files = budget.open_files / static_cast<std::uint64_t>(std::max(1, budget.ranks));
  cap = tune::worker_cap(cap_inputs);
  const int edge = std::min(cap.workers, std::max(1, static_cast<int>(std::lround(cores_per_rank * 4))));
  space = tune::default_space(edge, r.both_pin);
  // A CPU-trained job copies nothing to a device: pinning only costs.
  if (parse_device(r.device.device) == loader::DeviceChoice::Cpu) space.pin_memory = {false};
}

// 2. The store at rising concurrency, the CPU per sample, the step.
void Session::measure_phase() {
  rep.phase(2, "measure");
  samples = platform.list(*source, r.quiet);
  transform = platform.transform(r.work, samples);
  if (!r.device.model.empty()) model_step = platform.model_step(r.device);
  MeasureRequest mr;
  mr.source = source.get();
  mr.samples = &samples;
  mr.transform = transform.get();
  mr.step = model_step.get();
  if (!model_step) mr.step_ms = step_distribution_from(r.device.step_ms);
  mr.batch_size = r.batch_size;
  // The store as loaded as the widest space could load it (at most 512
  // fetches at once): the model reads its latency at each concurrency.
  mr.max_concurrency = std::min(512, budget.ranks * cap.workers);
  mr.seconds_per_level = r.measure_level_s;
  mr.stop = stop;
  mr.progress = [this](const std::string& text) { rep.line(text); };
  access = r.access_from ? *r.access_from
           : r.access == "stat-open-read" ? loader::AccessPattern{1, 0}
           : r.access == "open-read"      ? loader::AccessPattern{0, 0}
                                          : source->usual_access();
  mr.access = access;
  rep.line(fmt::format("access per sample: {} ({})", loader::describe(access),
                       r.access_from       ? "the calls per file the diagnosis counted in the job's workers (--from)"
                       : r.access != "auto" ? "--access"
                       : access.stats > 0   ? "a directory: an ImageFolder-style dataset stats each file before it opens "
                                              "it; --access open-read if the job does not"
                                            : "this store's usual reads; --access stat-open-read if the job stats each sample"));
  rep.line(fmt::format("{}: {} samples, {}", source->describe(), samples.size(),
                       format_bytes(std::accumulate(samples.begin(), samples.end(), std::uint64_t{0},
                                                    [](std::uint64_t a, const loader::SampleInfo& info) { return a + info.size; }))));
  m = platform.measure(mr);
  // Ctrl-C in phase 2: nothing is measured whole, so no model is worth simulating.
  if (stopped(stop)) throw runtime_error("tune was interrupted while measuring: no config written");
}

// 2, continued: what the job pays per sample beyond the built-in transform
// (--pytorch-probe, --from), so that the model and the trials describe it.
// --pytorch-probe: what a stock PyTorch pipeline costs per sample and per
// batch here, taken as the job's CPU.
void Session::probe_pytorch_costs() {
  // As many busy workers as the job's workers have cores (at most 8): a
  // sample then costs what it does in a job whose workers keep up.
  const int busy = std::clamp(static_cast<int>(std::lround(budget.worker_cores)), 1, 8);
  rep.line(fmt::format("PyTorch probe: {} DataLoader worker{} decoding 64 of the dataset's images with {} ...", busy,
                       busy == 1 ? "" : "s", r.python.empty() ? platform.default_python() : r.python));
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
  pr.stop = stop;
  const tune::PytorchCosts costs = platform.probe_pytorch(pr);
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

void Session::price_job_cpu() {
  transform_cpu_ms = m.cpu_mean_ms;
  job_cpu_ms = r.job_cpu_ms;
  job_cpu_source = r.from;
  // The loop's CPU per batch is part of the step the diagnosis measured
  // between waits: the model runs it on the shared cores, then the rest.
  loop_cpu_ms = 0;
  trial_step_ms = r.device.model.empty() ? r.device.step_ms : fmt::format("{:.3f}", m.step_mean_ms);
  if (r.pytorch_probe) probe_pytorch_costs();
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

}

// 3. Every candidate simulated, all ranks at once.
void Session::model_phase() {
  node = tune::NodeShape{budget.ranks, budget.worker_cores};
  cap_inputs.batch_bytes = m.workload.batch_bytes;
  cap_inputs.pinned_per_rank = budget.mem_per_rank;
  cap = tune::worker_cap(cap_inputs);
  if (space.workers.back() > cap.workers) space = tune::default_space(cap.workers, r.both_pin);
  const int edge = space.workers.back();
  std::vector<std::string> excluded;
  space = tune::widen_to_the_bottleneck(
      space, cap.workers, r.tolerance,
      [&](const tune::SearchSpace& s) { return predict_all(m.workload, node, s, budget.mem_per_rank, excluded); },
      predictions);
  if (predictions.empty()) {
    throw usage_error(fmt::format("no candidate fits the page-locked memory budget of {} per rank", format_bytes(budget.mem_per_rank)),
                      "lower --batch-size or raise --mem-budget");
  }
  rep.phase(3, fmt::format("model: {} candidates simulated", predictions.size()));
  rep.line(space.workers.back() > edge
               ? fmt::format("space: 1-{} workers per rank: past 4 per core ({}), because the best prediction sat at "
                             "the edge and more I/O-bound workers kept gaining; at most {} ({})",
                             space.workers.back(), edge, cap.workers, cap.because)
               : fmt::format("space: 1-{} workers per rank (4 per core, or the cap); the search grows it while the "
                             "best trial sits at its edge, up to {} ({})",
                             space.workers.back(), cap.workers, cap.because));
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

}

// 4. Trials of the most promising candidates (or of every one: --search
// grid); losers stop after a short round.
// The search's settings: tolerance, trial lengths, what prefetch costs, the
// budget and its clock, the model refitted to the trials, and the report of
// each trial as it ends.
tune::SearchOptions Session::search_options() {
  tune::SearchOptions so;
  so.tolerance = r.tolerance;
  so.full = {r.trial_steps, r.trial_s};
  so.short_round = {std::min(r.short_steps, r.trial_steps), std::min(r.first_round_s, r.trial_s)};
  so.worker_cap = cap.workers;
  // CPU-bound: the best trial's samples used most of the worker cores.
  so.cpu_bound = [this](const std::vector<tune::Trial>& trials) {
    const tune::Trial* best = nullptr;
    for (const auto& t : trials) {
      if (t.ok && (!best || t.round > best->round || (t.round == best->round && t.samples_per_s > best->samples_per_s))) best = &t;
    }
    return best && tune::cpu_share(*best, node.worker_cores, node.ranks) >= tune::kCpuBoundShare;
  };
  so.prefetch_cost = {m.workload.batch_bytes, tune::free_prefetch_bytes(static_cast<double>(budget.mem_per_rank))};
  so.stop = stop;
  // The callbacks run during verify_phase, while this session lives.
  so.clock = [this] { return platform.seconds_since_start(); };
  // The built-in loader starts at once: its short-to-full gap is the
  // machine's noise alone (about ±10% between paired runs on a shared VM),
  // where a job's also holds its start-up.
  if (r.exec.empty()) so.noise_cap = std::max(0.10, 2 * r.tolerance);
  if (!r.exec.empty()) {
    so.refit = [this](const std::vector<tune::Trial>& trials) {
      const auto f = job_fit(trials);
      std::vector<std::string> ignored;  // the same candidates fit the budget as before
      return f ? predict_all(f->workload, node, with_tried(space, trials), budget.mem_per_rank, ignored)
               : std::vector<Prediction>{};
    };
  } else {
    // The model with the trials' CPU breaks the ties their noise leaves
    // (choose()), as for a job.
    so.refit = [this](const std::vector<tune::Trial>& trials) {
      const auto f = builtin_cpu(trials);
      std::vector<std::string> ignored;
      return f.used ? predict_all(tune::with_cpu_from_trials(m.workload, f), node, with_tried(space, trials),
                                  budget.mem_per_rank, ignored)
                    : std::vector<Prediction>{};
    };
  }
  if (r.budget_s > 0) {
    so.budget_seconds = std::max(0.0, r.budget_s - (platform.seconds_since_start() - started));
  }
  so.on_trial = [this](const tune::Trial& t, const std::optional<tune::Trial>& best) {
    rep.clear();
    rep.line(fmt::format("{} {:<32} {}", t.round == 1 ? "short" : "full ", tune::describe(t.candidate),
                         !t.ok            ? "failed: " + t.note
                         : r.exec.empty() ? fmt::format("{:8.0f} samples/s, starvation {:3.0f}%", t.samples_per_s,
                                                        t.starvation * 100)
                                          : fmt::format("{:8.0f} samples/s{}", t.samples_per_s,  // a job's metric: no starvation
                                                        t.note.empty() ? "" : " (" + t.note + ")")));
    if (best) rep.progress(fmt::format("best so far: {} at {:.0f} samples/s", tune::describe(best->candidate), best->samples_per_s));
  };
  return so;
}

void Session::verify_phase() {
  rep.phase(4, fmt::format("verify: {} search, {} target", r.search, r.exec.empty() ? "built-in loader" : "your job"));
  if (!r.exec.empty()) {
    ExecTrialSetup setup{r.exec, r.metric_regex, r.batch_size, stop, budget.ranks,
                         r.first_figure_s, r.metric == "data-wait", m.step_mean_ms};
    // Phase 3's model sizes a {steps} job's first trial (job_pacing.hpp);
    // a copy, so the runner never outlives what it reads.
    setup.model_rate = [model = predictions](const tune::Candidate& c) {
      for (const auto& p : model) {
        if (p.candidate == c) return p.samples_per_s;
      }
      return 0.0;
    };
    auto exec = platform.job_runner(setup);
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
    setup.access = access;
    if (r.bind) setup.rank_cpus = budget.rank_cpus;
    setup.stop = stop;
    runner = platform.builtin_runner(setup);
  }
  const tune::SearchOptions so = search_options();
  result = r.search == "grid" ? tune::grid_search(space, *runner, so)
                                : tune::model_search(predictions, space, *runner, so);
  rep.clear();
  space = with_tried(space, result.trials);
  if (!result.grew_to.empty()) {
    rep.line(fmt::format("the best trial sat at the space's edge: grown to {} workers", space.workers.back()));
  }
  if (!result.edge.empty()) rep.line(result.edge);
  if (result.limited_by_cap) {
    rep.line(fmt::format("the cap limited the result: {} workers per rank ({}); more might feed the step faster", cap.workers,
                         cap.because));
  }
  if (!result.choice) {
    if (stopped(stop)) throw runtime_error("tune was interrupted before any trial finished: no config written");
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
}

// 5, first: the model refitted to the CPU the trials measured (phase 2 timed
// the transform for under a second; the trials timed every sample).
void Session::refit_to_trials() {
  // The model's final figures (prediction, each trial's model figure, the
  // advice) use the trials' CPU.
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
}

// What the trials ran, recorded in the config so that check re-measures the same.
void Session::record_workload(tune::TunedConfig& config) const {
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
  config.workload.stats_per_sample = access.stats;
  config.workload.extra_opens_per_sample = access.extra_opens;
}

// The chosen config's interval from its repeated full trials: one more
// full trial of it when the search ran it once (and time is left), then
// their spread, the model's error where it is known, and the ceiling the
// step sets (search.hpp: repeat_interval).
tune::Interval Session::chosen_interval(const Candidate& chosen, double model_error) {
  auto runs_of_chosen = [&] {
    std::vector<double> runs;
    for (const auto& t : result.trials) {
      if (t.ok && t.round == 2 && t.candidate == chosen) runs.push_back(t.samples_per_s);
    }
    return runs;
  };
  const bool time_left = r.budget_s <= 0 || platform.seconds_since_start() - started + r.trial_s <= r.budget_s;
  if (runs_of_chosen().size() == 1 && time_left && !stopped(stop)) {
    tune::Trial again = runner->run(chosen, {r.trial_steps, r.trial_s});
    again.candidate = chosen;
    again.round = 2;
    if (!stopped(stop)) {
      rep.line(fmt::format("repeat {:<31} {}", tune::describe(chosen),
                           again.ok ? fmt::format("{:8.0f} samples/s", again.samples_per_s) : "failed: " + again.note));
      result.trials.push_back(again);
    }
  }
  const double step_ms = exec_runner && exec_runner->known_step_ms() > 0 ? exec_runner->known_step_ms() : m.step_mean_ms;
  // A fed rank takes a batch per step at most (no step known: no ceiling).
  const double ceiling = step_ms > 0 ? r.batch_size * 1000.0 / step_ms : 0;
  return tune::repeat_interval(runs_of_chosen(), model_error, ceiling);
}

// What a grid of full trials over the space would take: each candidate's
// full trial as long as the search's full trials took on average (the cap
// where none ran).
double Session::grid_equivalent_seconds() const {
  double sum = 0;
  int n = 0;
  for (const auto& t : result.trials) {
    if (t.round == 2) sum += t.seconds, ++n;
  }
  return static_cast<double>(space.candidates().size()) * (n ? sum / n : r.trial_s);
}

// 5. The cheapest config within the tolerance of the best measured, its
// prediction and interval, the advice, and the config written.
// It runs past 80 lines because it assembles the config: each field is set
// once, in the order the document reads, from the figures computed above it.
tune::TunedConfig Session::choose_phase() {
  const auto& choice = *result.choice;
  const Candidate chosen = choice.chosen.candidate;
  rep.phase(5, "choose");
  rep.line(choice.reason);
  Prediction model_of_chosen{};
  for (const auto& p : predictions) {
    if (p.candidate == chosen) model_of_chosen = p;
  }
  if (model_of_chosen.samples_per_s == 0) {
    tune::SimOptions o;
    o.steps = tune::kModelSteps;
    model_of_chosen = tune::simulate(m.workload, node, chosen, o);
  }
  tune::TunedConfig config;
  config.batch_size = r.batch_size;
  config.chosen = chosen;
  config.ranks = budget.bindings;
  config.trials = result.trials;
  config.search = r.search;
  config.search_wall_s = platform.seconds_since_start() - started;
  config.grid_equivalent_s = grid_equivalent_seconds();
  config.space_workers_max = space.workers.back();
  config.worker_cap = cap.workers;
  config.worker_cap_because = cap.because;
  config.limited_by_cap = result.limited_by_cap;
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
  const double model_error = errors.empty() ? 0 : errors[errors.size() / 2];
  const tune::Interval interval = chosen_interval(chosen, model_error);
  config.trials = result.trials;  // with the chosen config's repeat
  // For --exec, the model calibrated to the other configs' trials
  // (leave-one-out, so the chosen config's own trial does not grade itself).
  tune::SimOptions cal_options;
  cal_options.steps = tune::kModelSteps;
  // Only the user's job differs from what phase 2 measured (its Python, its
  // IPC, its own step): the built-in loader ran those measurements, and its
  // raw model comes within a few percent of its full trial (bench/README.md),
  // where factors fitted to three or four short trials only add their noise.
  tune::Calibration cal;
  cal.samples_per_s = model_of_chosen.samples_per_s;
  if (!r.exec.empty()) cal = tune::calibrate(m.workload, node, result.trials, chosen, cal_options);
  const double model_scaled = cal.samples_per_s;  // the raw simulation when no other trial succeeded
  const double measured = interval.samples_per_s > 0 ? interval.samples_per_s : choice.chosen.samples_per_s;
  config.prediction = {measured, interval.low, interval.high, measured * budget.ranks, choice.chosen.starvation,
                       model_scaled};
  config.prediction.interval_given = interval.given;
  config.prediction.interval_because = interval.because;
  config.prediction.model_raw_samples_per_s = model_of_chosen.samples_per_s;
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
                              model_of_chosen.samples_per_s, platform.scratch_space());
  record_workload(config);

  rep.line(fmt::format("predicted {:.0f} samples/s per rank ({}); the model says {:.0f} ({})",
                       config.prediction.samples_per_s,
                       interval.given ? fmt::format("interval {:.0f}-{:.0f}: {}", interval.low, interval.high, interval.because)
                                      : "no interval: " + interval.because,
                       config.prediction.model_samples_per_s,
                       model_source(r, config.prediction, cal)));
  for (const auto& e : config.environment) rep.line(fmt::format("set {}={}: {}", e.name, e.value, e.because));
  for (const auto& a : config.cache) rep.line(fmt::format("cache ({}): {}", a.tier, a.because));
  rep.line(fmt::format("{} trials in {:.0f} s (a grid of full trials over the same {} configs: about {:.0f} s)",
                       result.trials.size(), config.search_wall_s, space.candidates().size(), config.grid_equivalent_s));
  if (result.stopped_early) rep.line("stopped early (Ctrl-C or --budget): this is the best config found so far");
  platform.write_config(r, config);
  if (r.out != "-") rep.line("config written to " + r.out);
  return config;
}

tune::TunedConfig Session::run() {
  started = platform.seconds_since_start();
  // A dataset that cannot be opened fails before any phase runs.
  if (r.data.data.empty()) {
    throw usage_error("--data is required: tune measures the dataset's storage and per-sample cost",
                      "give the dataset the job reads (directory, manifest, s3://..., synthetic:...)");
  }
  source = platform.open_store(r);
  budget_phase();
  measure_phase();
  price_job_cpu();
  model_phase();
  verify_phase();
  refit_to_trials();
  return choose_phase();
}

}  // namespace

tune::Distribution step_distribution_from(const std::string& step_ms) {
  const auto t = loader::parse_step_time(step_ms);
  return tune::step_distribution(t.mean_ms, t.spread_ms);
}

loader::DeviceChoice parse_device(const std::string& text) {
  if (text == "auto") return loader::DeviceChoice::Auto;
  if (text == "cuda") return loader::DeviceChoice::Cuda;
  if (text == "hip") return loader::DeviceChoice::Hip;
  if (text == "host") return loader::DeviceChoice::Host;
  if (text == "cpu") return loader::DeviceChoice::Cpu;
  throw usage_error(fmt::format("--device {} is not known", text), "use auto, cuda, hip, host or cpu");
}

tune::TunedConfig run_tune_session(const TuneRequest& r, TunePlatform& platform, TuneReporter& rep,
                                   const std::atomic<bool>* stop) {
  return Session(r, platform, rep, stop).run();
}

}  // namespace gpufeed::app
