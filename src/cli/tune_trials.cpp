// The built-in loader as tune's trial target (all ranks of the node at
// once), and what both targets share: the command template and the
// interrupted-trial rule.
#include "tune_trials.hpp"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "gpufeed/loader/basic_steps.hpp"
#include "gpufeed/loader/os_hooks.hpp"
#include "gpufeed/device/open_backend.hpp"

namespace gpufeed::cli {

using Clock = std::chrono::steady_clock;

tune::Trial BuiltinTrialRunner::run(const tune::Candidate& c, const tune::TrialLength& length) {
  tune::Trial trial;
  trial.candidate = c;
  const auto start = Clock::now();
  std::vector<loader::LoaderFigures> figures(static_cast<std::size_t>(setup_.ranks));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(setup_.ranks));
  std::vector<std::thread> ranks;
  for (int r = 0; r < setup_.ranks; ++r) {
    ranks.emplace_back([&, r] {
      try {
        std::string why;
        auto device = loader::open_device_backend(setup_.device, why);
        auto step = loader::with_loop_cpu(
            loader::make_sleep_step(loader::parse_step_time(setup_.step_ms), 1 + static_cast<std::uint64_t>(r)),
            setup_.step_cpu_ms * 1e3);
        loader::LoaderConfig config;
        config.workers = c.workers;
        config.prefetch_factor = c.prefetch_factor;
        config.pin_memory = c.pin_memory;
        config.batch_size = setup_.batch_size;
        config.mem_budget_bytes = setup_.mem_budget_bytes;
        // Ranks start at different places in the dataset, like DistributedSampler shards.
        config.shuffle = setup_.ranks > 1;
        config.seed = static_cast<std::uint64_t>(r);
        config.stats_per_sample = setup_.access.stats;
        config.extra_opens_per_sample = setup_.access.extra_opens;
        loader::LoaderRun run{*setup_.source, *setup_.samples, *setup_.transform, *device, *step, config, {}, {}};
        // The warm-up (prefetch x workers batches, excluded from the
        // figures), then the steady steps; the cap ends it earlier.
        run.limits.batches = warmup_batches(c) + static_cast<std::uint64_t>(std::max(1, length.steps));
        run.limits.duration = std::chrono::nanoseconds(static_cast<std::int64_t>(length.max_seconds * 1e9));
        run.hooks.stop = setup_.stop;
        if (!setup_.rank_cpus.empty()) {
          const auto cpus = setup_.rank_cpus[static_cast<std::size_t>(r) % setup_.rank_cpus.size()];
          run.hooks.on_worker_start = [cpus](int) { loader::bind_current_thread(cpus); };
        }
        figures[static_cast<std::size_t>(r)] = loader::run_loader(run);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : ranks) t.join();
  trial.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const loader::SampleError&) {
      throw;  // a bad sample dooms every trial: stop the search with it
    } catch (const std::exception& ex) {
      trial.ok = false;
      trial.note = ex.what();
      return trial;
    }
  }
  if (interrupted(trial, setup_.stop)) return trial;
  LatencyHistogram transform;
  std::uint64_t transform_cpu_ns = 0;
  for (const auto& f : figures) {
    trial.samples_per_s += f.samples_per_s / setup_.ranks;
    trial.starvation += f.starvation / setup_.ranks;
    transform.merge(f.transform);
    transform_cpu_ns += f.transform_cpu_ns;
  }
  // The steps every rank measured after its warm-up; short of the length
  // asked, the cap cut the trial.
  std::uint64_t steady = figures.front().batches;
  bool from_start = false;
  for (const auto& f : figures) {
    steady = std::min(steady, f.batches);
    from_start = from_start || f.steady_from_start;
  }
  trial.steady_steps = from_start ? 0 : static_cast<int>(steady);
  if (trial.steady_steps < length.steps) {
    trial.capped = true;
    trial.note = from_start ? fmt::format("the {:g} s cap ended it inside its warm-up of {} batches: the whole run "
                                          "counted, warm-up and all",
                                          length.max_seconds, warmup_batches(c))
                            : fmt::format("the {:g} s cap ended it after {} of its {} steady steps", length.max_seconds,
                                          trial.steady_steps, length.steps);
  }
  trial.transform_ms = transform.mean_ns() / 1e6;
  trial.transform_samples = transform.count;
  if (transform.count) trial.transform_cpu_ms = static_cast<double>(transform_cpu_ns) / 1e6 / static_cast<double>(transform.count);
  return trial;
}

std::uint64_t warmup_batches(const tune::Candidate& c) {
  return static_cast<std::uint64_t>(std::max(1, c.workers)) * static_cast<std::uint64_t>(std::max(1, c.prefetch_factor));
}

bool interrupted(tune::Trial& trial, const std::atomic<bool>* stop) {
  if (!stop || !stop->load()) return false;
  trial.ok = false;
  trial.too_short = false;
  trial.note = fmt::format("interrupted after {:.1f} s: part of a trial measures nothing", trial.seconds);
  return true;
}

std::string expand_command(const std::string& command, const tune::Candidate& c, int batch_size, std::uint64_t steps) {
  std::string out;
  for (std::size_t i = 0; i < command.size();) {
    if (command[i] != '{') {
      out += command[i++];
      continue;
    }
    const auto close = command.find('}', i);
    if (close == std::string::npos) throw usage_error(fmt::format("--exec: unclosed '{{' in \"{}\"", command));
    const std::string name = command.substr(i + 1, close - i - 1);
    if (name == "num_workers") out += std::to_string(c.workers);
    else if (name == "prefetch_factor") out += std::to_string(c.prefetch_factor);
    else if (name == "pin_memory") out += c.pin_memory ? "1" : "0";
    else if (name == "batch_size") out += std::to_string(batch_size);
    else if (name == "steps") out += std::to_string(steps);
    else {
      throw usage_error(fmt::format("--exec: unknown placeholder {{{}}}", name),
                        "use {num_workers}, {prefetch_factor}, {pin_memory} (1/0), {batch_size} and {steps}");
    }
    i = close + 1;
  }
  return out;
}


// The command template and its metric are checked before the first trial.
ExecTrialRunner::ExecTrialRunner(ExecTrialSetup setup) : setup_(std::move(setup)) {
  try {
    metric_ = std::regex(setup_.metric_regex);
  } catch (const std::regex_error& e) {
    throw usage_error(fmt::format("--metric-regex \"{}\" is not a regular expression: {}", setup_.metric_regex, e.what()));
  }
  if (metric_.mark_count() < 1) {
    throw usage_error(fmt::format("--metric-regex \"{}\" has no group", setup_.metric_regex),
                      "capture the number, e.g. 'samples/s: ([0-9.]+)'");
  }
  if (setup_.command.find("{num_workers}") == std::string::npos) {
    throw usage_error("--exec has no {num_workers} placeholder", "e.g. --exec 'python train.py --workers {num_workers}'");
  }
}

}  // namespace gpufeed::cli
