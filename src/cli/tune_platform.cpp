#include "tune_platform.hpp"

#include <sys/resource.h>
#include <sys/statvfs.h>

#include <fmt/format.h>

#include <filesystem>

#include "bench_setup.hpp"
#include "gpufeed/atomic_file.hpp"
#include "gpufeed/cpulist.hpp"
#include "gpufeed/trace/proc_reader.hpp"
#include "gpufeed/probe/host_inspector.hpp"
#include "gpufeed/units.hpp"
#include "pytorch_probe.hpp"
#include "tune_measure.hpp"
#include "tune_trials.hpp"

namespace gpufeed::cli {
namespace {


app::TuneBudget node_budget(const app::TuneRequest& r, const Io& io) {
  app::TuneBudget b;
  ProbeReport probe = probe_this_host(io);
  const HostInfo host = inspect_host(io.host);
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
  // What caps the workers (search.hpp: worker_cap): the memory the host
  // has free, and the open-file limit this process and its jobs inherit.
  if (const auto mem = ProcReader().meminfo()) b.mem_available = mem->available_bytes;
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) b.open_files = files.rlim_cur;
  return b;
}

}  // namespace

app::TuneBudget CliTunePlatform::budget(const app::TuneRequest& r) { return node_budget(r, ctx_.io); }

std::unique_ptr<loader::SampleSource> CliTunePlatform::open_store(const app::TuneRequest& r) {
  return open_data(r.data, ctx_.io);
}

std::vector<loader::SampleInfo> CliTunePlatform::list(loader::SampleSource& source, bool quiet) {
  return list_data(source, ctx_.io, quiet);
}

std::unique_ptr<loader::SampleTransform> CliTunePlatform::transform(const app::WorkOptions& work,
                                                                    const std::vector<loader::SampleInfo>& samples) {
  return make_transform(work, samples);
}

std::unique_ptr<loader::StepRunner> CliTunePlatform::model_step(const app::DeviceOptions& device) {
  return make_step(device, 1);
}

app::Measured CliTunePlatform::measure(const app::MeasureRequest& request) { return measure_for_tune(request); }

tune::PytorchCosts CliTunePlatform::probe_pytorch(const app::PytorchProbeRequest& request) {
  return cli::probe_pytorch(request, ctx_.io);
}

std::string CliTunePlatform::default_python() { return cli::default_python(); }

std::unique_ptr<tune::TrialRunner> CliTunePlatform::builtin_runner(const app::BuiltinTrialSetup& setup) {
  return std::make_unique<BuiltinTrialRunner>(setup);
}

std::unique_ptr<app::JobTrialRunner> CliTunePlatform::job_runner(const app::ExecTrialSetup& setup) {
  return std::make_unique<ExecTrialRunner>(setup);
}

tune::ScratchSpace CliTunePlatform::scratch_space() {
  tune::ScratchSpace s;
  s.path = std::filesystem::temp_directory_path().string();
  struct statvfs fs {};
  if (statvfs(s.path.c_str(), &fs) == 0) s.free_bytes = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
  return s;
}

void CliTunePlatform::write_config(const app::TuneRequest& r, const tune::TunedConfig& config) {
  write_tune_config(r, ctx_, config);
  if (r.emit == "python") ctx_.io.out << tune::emit_python(config);
}

double CliTunePlatform::seconds_since_start() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void CliTuneReporter::phase(int n, const std::string& title) {
  if (!quiet_) ctx_.io.out << ctx_.style.heading(fmt::format("[{}/5] {}", n, title)) << "\n" << std::flush;
}

void CliTuneReporter::line(const std::string& text) {
  if (!quiet_) ctx_.io.out << "  " << text << "\n" << std::flush;
}

void CliTuneReporter::progress(const std::string& text) { progress_.show(text); }

void CliTuneReporter::clear() { progress_.clear(); }

void write_tune_config(const app::TuneRequest& r, Context& ctx, const tune::TunedConfig& config) {
  const HostInfo host = inspect_host(ctx.io.host);
  const Json doc = make_document("config", host, tune::to_json(config), ctx.io.now());
  if (r.out == "-") {
    ctx.io.out << dump_json(doc, 2) << "\n";
  } else {
    ctx.io.out.flush();  // the report so far comes first when --out is /dev/stdout
    write_output(r.out, dump_json(doc, 2) + "\n");
  }
}

}  // namespace gpufeed::cli
