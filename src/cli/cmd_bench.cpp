// `gpufeed bench`: options -> the loader's parts -> one run -> report.
#include <fmt/format.h>

#include <chrono>
#include <sstream>

#include "bench_setup.hpp"
#include "context.hpp"
#include "option_values.hpp"
#include "progress_line.hpp"
#include "stores.hpp"
#include "gpufeed/loader/bench_report.hpp"
#include "gpufeed/cache/cache.hpp"
#include "gpufeed/loader/os_hooks.hpp"
#include "gpufeed/os/stop_signals.hpp"
#include "gpufeed/probe/host_inspector.hpp"
#include "gpufeed/units.hpp"
#include "gpufeed/device/open_backend.hpp"

namespace gpufeed::cli {
namespace {

struct BenchOptions {
  DataOptions data;
  WorkOptions work;
  DeviceOptions device;
  loader::LoaderConfig config;
  bool no_pin = false;
  std::string mem_budget;
  bool bind = false;
  int rank = 0;
  double duration_s = 0;
  std::uint64_t batches = 0;
  std::optional<std::uint64_t> warmup;
  bool storage_only = false;
  std::vector<int> concurrency{1, 4, 16, 64};
  double level_s = 2;
  std::uint64_t level_samples = 2000;
  OutputOptions output;
};

int run_storage_only(BenchOptions& o, Context& ctx) {
  auto source = open_data(o.data, ctx.io);
  const auto samples = list_data(*source, ctx.io, o.output.quiet);
  os::StopOnSignal stop;
  ProgressLine progress(ctx.io.err, ctx.io.err_is_tty && !o.output.quiet);
  loader::StorageProbeOptions options;
  options.concurrency = o.concurrency;
  options.per_level = std::chrono::milliseconds(static_cast<long>(o.level_s * 1000));
  options.max_samples_per_level = o.level_samples;
  options.stop = &stop.flag();
  options.on_level = [&](const loader::StorageLevel& l) {
    progress.show(fmt::format("concurrency {:3}: {:.0f} IOPS, read p50 {:.2f} ms", l.concurrency, l.samples_per_s, l.read.p50_ms));
  };
  const auto table = loader::measure_storage(*source, samples, options);
  progress.clear();
  if (ctx.wants_text(o.output)) loader::render_text(table, ctx.style, ctx.io.out);
  ctx.emit_json(o.output, make_document("bench", inspect_host(ctx.io.host), loader::to_json(table), ctx.io.now()));
  return 0;
}

void check_options(BenchOptions& o) {
  // The values' ranges are checked while the command line is parsed (option_values.hpp).
  if (o.duration_s == 0 && o.batches == 0) o.duration_s = 20;  // the default run
  o.config.pin_memory = !o.no_pin;
  if (!o.mem_budget.empty()) o.config.mem_budget_bytes = parse_size(o.mem_budget, "--mem-budget");
}

// Without --mem-budget, the loader's buffers get what probe's budget gives a
// rank, as tune's candidates do: a typo in --prefetch fails at once instead
// of filling the machine's memory.
void apply_default_budget(BenchOptions& o, const Io& io) {
  if (o.config.mem_budget_bytes > 0) return;
  const ProbeReport probe = probe_this_host(io);
  for (const auto& rank : probe.budget.ranks) {
    if (rank.prefetch_bytes > 0 && (o.config.mem_budget_bytes == 0 || rank.prefetch_bytes < o.config.mem_budget_bytes)) {
      o.config.mem_budget_bytes = rank.prefetch_bytes;
    }
  }
}

// Every worker (and each of its io-depth fetches) is a thread: refused
// before the first starts when the system's limits would stop one midway.
void check_thread_limits(const loader::LoaderConfig& config) {
  const std::uint64_t needed = static_cast<std::uint64_t>(config.workers) * static_cast<std::uint64_t>(config.io_depth) + 8;
  const loader::ThreadHeadroom headroom = loader::thread_headroom();
  if (needed <= headroom.threads) return;
  throw usage_error(fmt::format("--workers {} x --io-depth {} needs about {} threads; {} allows {} more", config.workers,
                                config.io_depth, needed, headroom.limit, headroom.threads),
                    "lower --workers or --io-depth");
}

int run_bench(BenchOptions& o, Context& ctx) {
  check_options(o);
  ctx.check_json_target(o.output);
  if (o.storage_only) return run_storage_only(o, ctx);

  apply_default_budget(o, ctx.io);
  check_thread_limits(o.config);
  loader::BenchReport report;
  std::vector<int> cpus;
  if (o.bind) cpus = rank_worker_cpus(ctx.io, o.rank, report.setup.worker_cpus);
  auto source = open_data(o.data, ctx.io);
  auto samples = list_data(*source, ctx.io, o.output.quiet);
  auto transform = make_transform(o.work, samples);
  // Refuse an over-budget config before touching a device.
  loader::check_memory_budget(o.config, loader::plan_memory(o.config, transform->output_bytes()));
  std::string why;
  auto device = loader::open_device_backend(parse_device(o.device.device), why);
  auto step = make_step(o.device, o.config.seed + 1);
  if (!device->transfers() && o.config.pin_memory) {
    o.config.pin_memory = false;  // as PyTorch: pinning is for host-to-device copies
    report.notes.push_back("pin_memory off: --device cpu copies nothing");
  }

  os::StopOnSignal stop;
  const auto started = std::chrono::steady_clock::now();
  ProgressLine progress(ctx.io.err, ctx.io.err_is_tty && !o.output.quiet);
  loader::LoaderRun run{*source, samples, *transform, *device, *step, o.config, {}, {}};
  if (o.duration_s > 0) run.limits.duration = std::chrono::nanoseconds(static_cast<std::int64_t>(o.duration_s * 1e9));
  if (o.batches > 0) run.limits.batches = o.batches;
  run.limits.warmup_batches = o.warmup;
  run.hooks.stop = &stop.flag();
  run.hooks.on_progress = [&](const loader::Progress& p) { progress.show(loader::progress_line(p)); };
  if (!cpus.empty()) run.hooks.on_worker_start = [&cpus](int) { loader::bind_current_thread(cpus); };

  report.figures = loader::run_loader(run);
  progress.clear();
  if (report.figures.stopped_early && report.figures.total_batches == 0) {
    throw runtime_error(fmt::format("bench was interrupted after {:.1f} s, before its first batch: nothing measured",
                                    std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()));
  }
  report.setup.source = source->describe();
  report.setup.storage_type = source->storage_type();
  report.setup.dataset_samples = samples.size();
  report.setup.transform = transform->describe();
  report.setup.sample_bytes = transform->output_bytes();
  report.setup.device = device->name();
  report.setup.device_detail = device->description();
  report.setup.device_why = why;
  report.setup.step = step->describe();
  report.setup.config = o.config;
  report.tiers = source->tier_stats();
  for (const auto& h : loader::cache_health(*source)) {
    if (h.write_failures) {
      report.notes.push_back(fmt::format("{} cache: {} writes failed (last: {}); reads were served from the store",
                                         h.tier, h.write_failures, h.last_write_error));
    }
    if (h.corrupt) {
      report.notes.push_back(fmt::format("{} cache: {} entries failed validation and were fetched again", h.tier, h.corrupt));
    }
  }
  report.peak_rss_bytes = loader::peak_rss_bytes();
  if (report.figures.steady_from_start) {
    report.notes.push_back("the run ended before the warm-up did: figures include the start; run longer");
  }
  if (o.config.pin_memory && !report.figures.page_locked) {
    report.notes.push_back("batch buffers are not page-locked (" + device->description() + ")");
  }
  if (ctx.wants_text(o.output)) loader::render_text(report, ctx.style, o.output.verbose, ctx.io.out);
  ctx.emit_json(o.output, make_document("bench", inspect_host(ctx.io.host), loader::to_json(report), ctx.io.now()));
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Run the built-in prefetching loader (PyTorch DataLoader semantics) against a dataset and measure "
               "samples/s, starvation and where the time goes; or, with --storage-only, the storage alone");
  auto* data = cmd->add_option("--data", o->data.data,
                               "Dataset: " + data_specs() +
                                   " (synthetic:PRESET[,key=value...]; presets: memory, local-nvme, nfs, s3fs, s3)")
                   ->type_name("SOURCE");
  data->required();
  cmd->add_option("--workers", o->config.workers, "DataLoader num_workers")
      ->check(whole_in("--workers", {1, 4096, "workers", false, "8"}))->default_val(4)->group("Loader");
  cmd->add_option("--prefetch", o->config.prefetch_factor, "DataLoader prefetch_factor")
      ->check(whole_in("--prefetch", {1, 65536, "batches per worker", false, "4"}))->default_val(2)->group("Loader");
  cmd->add_option("--batch-size", o->config.batch_size, "Samples per batch")
      ->check(whole_in("--batch-size", {1, 1048576, "samples", false, "64"}))->default_val(32)->group("Loader");
  cmd->add_option("--io-depth", o->config.io_depth, "Fetches one worker overlaps within its batch (1 = like PyTorch)")
      ->check(whole_in("--io-depth", {1, 256, "fetches", false, "4"}))->default_val(1)->group("Loader");
  cmd->add_flag("--no-pin-memory", o->no_pin, "Collate into pageable memory (pin_memory=False)")->group("Loader");
  cmd->add_flag("--shuffle", o->config.shuffle, "Seeded shuffle per epoch (default: dataset order)")->group("Loader");
  cmd->add_option("--seed", o->config.seed, "Seed for shuffle and step-time draws")
      ->check(whole_in("--seed", {0, 9.2e18, "", false, "7"}))->default_val(0)->group("Loader");
  cmd->add_flag("--skip-bad", o->config.skip_bad, "Count and skip unreadable or corrupt samples instead of stopping")
      ->group("Loader");
  cmd->add_option("--mem-budget", o->mem_budget, "Refuse configs whose page-locked buffers exceed this (default: probe's prefetch budget per rank)")
      ->check(size_value("--mem-budget"))->type_name("SIZE")->group("Loader");
  cmd->add_flag("--bind", o->bind, "Bind workers to the NUMA-local cores of --rank's GPU (from gpufeed probe)")
      ->group("Loader");
  cmd->add_option("--rank", o->rank, "Rank (GPU) whose worker cores --bind uses")
      ->check(whole_in("--rank", {0, 4095, "", false, "1"}))->default_val(0)->group("Loader");

  cmd->add_option("--decode", o->work.decode, "Per-sample work: none (copy bytes) or jpeg (decode + crop + resize)")
      ->check(one_of("--decode", {"none", "jpeg"}))->default_val("none")->group("Per sample");
  cmd->add_option("--cpu-us", o->work.cpu_us, "Per-sample CPU work in microseconds (emulates decode)")
      ->check(real_in("--cpu-us", {0, 1e7, "microseconds", false, "500"}))
      ->group("Per sample");
  cmd->add_option("--image-size", o->work.image_size, "--decode jpeg: output side in pixels")
      ->check(whole_in("--image-size", {1, 16384, "pixels", false, "224"}))->default_val(224)
      ->group("Per sample");
  cmd->add_flag("--full-decode", o->work.full_decode,
                "--decode jpeg: decode at full size, as PIL and torchvision do (default: DCT-scaled, like PIL's draft mode)")
      ->group("Per sample");
  cmd->add_option("--crop", o->work.crop,
                  "--decode jpeg: center (Resize + CenterCrop 87.5%), random-resized (RandomResizedCrop) or whole "
                  "(Resize((h, w)), as PIL's Image.resize((w, h)): the whole image, aspect not kept)")
      ->default_val("center")->check(one_of("--crop", {"center", "random-resized", "whole"}))->group("Per sample");
  cmd->add_option("--filter", o->work.filter,
                  "--decode jpeg: resize filter: fast (2-tap), bilinear or bicubic (antialiased, the CPU cost of "
                  "PIL's Image.resize and torchvision's Resize; PIL's default is bicubic)")
      ->check(one_of("--filter", {"fast", "bilinear", "bicubic"}))->default_val("fast")->group("Per sample");
  cmd->add_option("--sample-bytes", o->work.sample_bytes, "--decode none: bytes per sample in the batch "
                                                          "(default: the largest sample)")
      ->check(size_value("--sample-bytes"))->type_name("SIZE")->group("Per sample");

  cmd->add_option("--device", o->device.device, "Where batches go: auto, cuda, hip, host (no GPU: a copy thread plays the DMA engine) or cpu (training on the CPU: no copy)")
      ->check(one_of("--device", {"auto", "cuda", "hip", "host", "cpu"}))->default_val("auto")->group("Step");
  cmd->add_option("--step-ms", o->device.step_ms, "Simulated training step: MS or MEAN:SPREAD (0 = loader alone)")
      ->check(step_time_value("--step-ms"))->default_val("0")->group("Step");
  cmd->add_option("--model", o->device.model, "TorchScript model run per batch (forward + backward) by LibTorch")
      ->check(input_path("--model", {"TorchScript model", "give a file saved with torch.jit.save"}))->type_name("FILE.pt")->group("Step");

  cmd->add_option("--duration", o->duration_s, "Seconds to run (default 20 unless --batches)")
      ->check(real_in("--duration", {0, 604800, "seconds", true, "20"}))->group("Run");
  cmd->add_option("--batches", o->batches, "Steps to run")
      ->check(whole_in("--batches", {1, 1e12, "steps", false, "500"}))->group("Run");
  cmd->add_option("--warmup", o->warmup, "Steps left out of the figures (default prefetch x workers)")
      ->check(whole_in("--warmup", {0, 1e12, "steps", false, "16"}))->group("Run");

  add_store_options(*cmd, o->data, true);

  cmd->add_flag("--storage-only", o->storage_only, "Measure the storage alone: stat/open/read latency, MB/s and IOPS "
                                                   "at each --concurrency")->group("Storage");
  cmd->add_option("--concurrency", o->concurrency, "Concurrency levels for --storage-only")->delimiter(',')
      ->check(whole_in("--concurrency", {1, 1024, "requests in flight", false, "1,4,16"}))
      ->default_str("1,4,16,64")->group("Storage");
  cmd->add_option("--level-seconds", o->level_s, "Time per concurrency level")
      ->check(real_in("--level-seconds", {0, 3600, "seconds", true, "2"}))->default_val(2)->group("Storage");
  cmd->add_option("--level-samples", o->level_samples, "Samples per concurrency level at most")
      ->check(whole_in("--level-samples", {1, 1e9, "samples", false, "2000"}))->default_val(2000)
      ->group("Storage");
  add_output_options(*cmd, o->output);
  cmd->footer(R"(Workers build whole batches, one sample after another; batches arrive in order; at most
prefetch x workers batches are in flight; batches are collated into page-locked buffers and
copied to the device on a dedicated stream while the previous step runs (docs/loader.md).

Examples:
  gpufeed bench --data synthetic:s3fs --workers 8 --prefetch 4 --batch-size 64 --step-ms 40
  gpufeed bench --data /data/imagenet/train --decode jpeg --workers 8 --batch-size 256 --step-ms 40
  gpufeed bench --data s3://bucket/train --s3-endpoint http://127.0.0.1:9000 --cache-dir /nvme/cache
  gpufeed bench --storage-only --data /mnt/s3fs/train --json storage.json)");
  return {cmd, [o](Context& ctx) { return run_bench(*o, ctx); }};
}

}  // namespace gpufeed::cli
