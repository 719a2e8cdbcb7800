// `gpufeed tune`: options -> TuneRequest -> run_tune.
#include "context.hpp"
#include "option_values.hpp"
#include "stores.hpp"
#include "tune_session.hpp"

namespace gpufeed::cli {

Command add_tune_command(CLI::App& app) {
  auto r = std::make_shared<TuneRequest>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "Find the DataLoader config (num_workers, prefetch_factor, pin_memory, CPU binding) that feeds the "
              "GPUs: measure, model every candidate, verify the best by trials, write a JSON config");
  cmd->add_option("--data", r->data.data, "Dataset: " + data_specs())
      ->type_name("SOURCE");
  cmd->add_option("--batch-size", r->batch_size, "Samples per batch")
      ->check(whole_in("--batch-size", {1, 1048576, "samples", false, "64"}))->default_val(32);
  cmd->add_option("--step-ms", r->device.step_ms, "Training step per batch: MS or MEAN:SPREAD")
      ->check(step_time_value("--step-ms"))->default_val("0");
  cmd->add_option("--from", r->from,
                  "Take the step and per-sample CPU from a diagnosis of the real job (gpufeed diagnose --json): the "
                  "loop's time between its data waits, and the CPU its workers and loop spent per sample")
      ->check(input_path("--from", {"diagnosis", "write one with gpufeed diagnose --json FILE"}))
      ->type_name("DIAGNOSIS.json");
  cmd->add_flag("--pytorch-probe", r->pytorch_probe,
               "--decode jpeg: measure what a stock PyTorch pipeline (PIL decode and resize in a DataLoader "
               "worker, the batch handed to the loop) costs per sample, as a ratio to gpufeed's own decode timed "
               "in turns with it, and per batch, so the trials pay it and the model describes a PyTorch job "
               "rather than gpufeed's own loader (about 5 s; needs python3-torch)")
      ->group("Per sample");
  cmd->add_option("--python", r->python, "The Python that --pytorch-probe runs (default /usr/bin/python3, else "
                                         "python3 from PATH)")
      ->type_name("PATH")->group("Per sample");
  cmd->add_option("--model", r->device.model, "TorchScript model whose forward+backward is the step")
      ->check(input_path("--model", {"TorchScript model", "give a file saved with torch.jit.save"}))
      ->type_name("FILE.pt");
  cmd->add_option("--gpus", r->gpus, "Ranks on this node, tuned together (default: the GPUs found, at least 1)")
      ->check(whole_in("--gpus", {1, 1024, "ranks", false, "8"}));
  cmd->add_option("--search", r->search, "model (default: simulate all, verify the best) or grid (try every config)")
      ->check(one_of("--search", {"model", "grid"}))->default_val("model");
  cmd->add_option("--exec", r->exec,
                  "Tune your own job instead of the built-in loader: a command with {num_workers}, "
                  "{prefetch_factor}, {pin_memory}, {batch_size} and {steps} (the trial's warm-up plus steady steps, for a job "
                  "that can stop after so many batches), run once per trial")
      ->type_name("CMD")->group("Your job");
  cmd->add_option("--metric-regex", r->metric_regex, "Where --exec prints its throughput (group 1)")
      ->default_val("samples/s: ([0-9.]+)")->group("Your job");
  cmd->add_option("--metric", r->metric,
                  "output (default): the last match of --metric-regex in the job's output; data-wait: for a job that "
                  "prints none, trace its training loop (eBPF, as root) and count the batches its waits for data "
                  "end, as diagnose does")
      ->check(one_of("--metric", {"output", "data-wait"}))->default_val("output")->group("Your job");
  cmd->add_option("--trial-steps", r->trial_steps,
                  "Steady-state steps a full trial measures, after its warm-up (the first batch and prefetch x "
                  "workers batches)")
      ->check(whole_in("--trial-steps", {1, 1000000, "steps", false, "60"}))->default_val(60);
  cmd->add_option("--short-steps", r->short_steps, "Steady-state steps of the short round that weeds out losers")
      ->check(whole_in("--short-steps", {1, 1000000, "steps", false, "20"}))->default_val(20);
  cmd->add_option("--trial-seconds", r->trial_s,
                  "The most a full trial may take; a trial it cuts short of its steps says so")
      ->check(real_in("--trial-seconds", {0, 86400, "seconds", true, "120"}))->default_val(120);
  cmd->add_option("--first-round-seconds", r->first_round_s, "The most a short-round trial may take")
      ->check(real_in("--first-round-seconds", {0, 86400, "seconds", true, "40"}))->default_val(40);
  cmd->add_option("--first-figure-seconds", r->first_figure_s,
                  "--exec: the most the first trial waits for the job's first figure (its start-up and reporting "
                  "interval size the later trials)")
      ->check(real_in("--first-figure-seconds", {0, 86400, "seconds", true, "300"}))->default_val(300)->group("Your job");
  cmd->add_option("--access", r->access,
                  "What the job calls per sample, replayed by the storage measurement and the trials: auto (a "
                  "directory: stat-open-read, as ImageFolder; other stores: open-read), stat-open-read or open-read; "
                  "--from sets the calls the diagnosis counted")
      ->check(one_of("--access", {"auto", "stat-open-read", "open-read"}))->default_val("auto")->group("Per sample");
  cmd->add_option("--measure-seconds", r->measure_level_s, "Time per storage concurrency level in phase 2 (a level runs on to 12 samples, for at most 3x this)")
      ->check(real_in("--measure-seconds", {0, 3600, "seconds", true, "1.5"}))->default_val(1.5);
  cmd->add_option("--budget", r->budget_s, "Wall-time budget in seconds; the best config so far is written when it ends")
      ->check(real_in("--budget", {0, 604800, "seconds", true, "600"}));
  cmd->add_option("--mem-budget", r->mem_budget, "Page-locked memory per rank (default: probe's prefetch budget)")
      ->check(size_value("--mem-budget"))->type_name("SIZE");
  cmd->add_option("--tolerance", r->tolerance, "Pick the cheapest config within this share of the best")
      ->check(real_in("--tolerance", {0, 0.99, "a share", false, "0.02"}))->default_val(0.02);
  cmd->add_option("--max-workers", r->max_workers,
                  "Most workers per rank to consider (default: what memory, open files and the page-locked budget "
                  "allow, at most 256; the space starts at 4 per core and grows while workers are I/O-bound)")
      ->check(whole_in("--max-workers", {1, 4096, "workers", false, "16"}));
  cmd->add_flag("--try-unpinned", r->both_pin, "Also try pin_memory=False");
  cmd->add_flag("--bind", r->bind, "Bind trial workers to each rank's NUMA-local cores");
  cmd->add_option("--decode", r->work.decode, "Per-sample work: none or jpeg")
      ->check(one_of("--decode", {"none", "jpeg"}))->default_val("none")->group("Per sample");
  cmd->add_option("--cpu-us", r->work.cpu_us, "Per-sample CPU work in microseconds")
      ->check(real_in("--cpu-us", {0, 1e7, "microseconds", false, "500"}))->group("Per sample");
  cmd->add_flag("--full-decode", r->work.full_decode, "--decode jpeg: decode at full size, as PIL does")
      ->group("Per sample");
  cmd->add_option("--filter", r->work.filter,
                  "--decode jpeg: resize filter: fast (2-tap), bilinear or bicubic (antialiased, as PIL's "
                  "Image.resize, whose default is bicubic, and torchvision's Resize)")
      ->check(one_of("--filter", {"fast", "bilinear", "bicubic"}))->default_val("fast")->group("Per sample");
  cmd->add_option("--crop", r->work.crop,
                  "--decode jpeg: center (Resize + CenterCrop 87.5%), random-resized (RandomResizedCrop) or whole "
                  "(Resize((h, w)), as PIL's Image.resize((w, h)): the whole image, aspect not kept)")
      ->default_val("center")->check(one_of("--crop", {"center", "random-resized", "whole"}))->group("Per sample");
  cmd->add_option("--image-size", r->work.image_size, "--decode jpeg output side")
      ->check(whole_in("--image-size", {1, 16384, "pixels", false, "224"}))->default_val(224)->group("Per sample");
  cmd->add_option("--device", r->device.device, "auto, cuda, hip, host or cpu")
      ->check(one_of("--device", {"auto", "cuda", "hip", "host", "cpu"}))->default_val("auto");
  add_store_options(*cmd, r->data, false);
  cmd->add_option("--out", r->out, "Where the config goes (- for stdout)")
      // The default is checked when tune runs: a check here would run for every command.
      ->default_val("gpufeed-config.json")->check(output_path("--out", true))->type_name("FILE");
  cmd->add_option("--emit", r->emit, "Also print a snippet: python (DataLoader kwargs and worker_init_fn)")
      ->check(one_of("--emit", {"python"}));
  cmd->add_flag("--simulate", r->simulate, "No hardware: model the --profile machine and workload and print the best")
      ->group("Simulate");
  cmd->add_option("--profile", r->profiles, "A hardware or workload profile (name in profiles/ or a file)")
      ->group("Simulate");
  cmd->add_flag("--quiet,-q", r->quiet, "Only write the config");
  // Accepted as on every command; tune's phase lines are its whole report.
  cmd->add_flag("--verbose,-v")->description("Accepted for symmetry with the other commands (tune's report is complete without it)");
  cmd->footer(R"(Phases: 1 budget (probe) - 2 measure (storage vs concurrency, CPU per sample, step) - 3 model
(simulate every candidate, all ranks at once) - 4 verify (trials; losers stop after a short round)
- 5 choose (the cheapest config within --tolerance of the best measured). Ctrl-C writes the best
config found so far. docs/tune.md explains each phase.

Examples:
  gpufeed tune --data /mnt/s3fs/train --batch-size 256 --step-ms 45
  gpufeed tune --data /data/train --decode jpeg --full-decode --filter bilinear --batch-size 256 --step-ms 45 --pytorch-probe
  sudo gpufeed diagnose --pid PID --json diag.json && gpufeed tune --data /mnt/s3fs/train --batch-size 256 --from diag.json
  gpufeed tune --data /data/train --exec 'python train.py --workers {num_workers} --prefetch {prefetch_factor}' --metric-regex 'samples/s: ([0-9.]+)'
  gpufeed tune --simulate --profile h100-8 --profile imagenet-resnet50
  gpufeed check --config gpufeed-config.json     # in CI)");
  return {cmd, [r](Context& ctx) { return run_tune(*r, ctx); }};
}

}  // namespace gpufeed::cli
