#include "bench_setup.hpp"

#include "progress_line.hpp"
#include "stores.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "gpufeed/cpulist.hpp"
#include "gpufeed/loader/basic_steps.hpp"
#include "gpufeed/cache/cache.hpp"
#include "gpufeed/decode/jpeg_transform.hpp"
#include "gpufeed/probe/host_inspector.hpp"
#include "gpufeed/probe/hwloc_topology.hpp"
#include "gpufeed/probe_report.hpp"
#include "gpufeed/units.hpp"
#include "gpufeed/torch_step/torch_loader.hpp"

namespace gpufeed::cli {

std::unique_ptr<loader::SampleSource> open_data(const DataOptions& o, const Io& io) {
  if (o.data.empty()) throw usage_error("--data is required", "give " + data_specs());
  const StoreKind& kind = store_kind_of(o.data);
  for (const auto& other : store_kinds()) {
    if (&other != &kind && other.options_given(o)) {
      throw usage_error(fmt::format("{} options apply to {} data only", other.options, other.spec),
                        fmt::format("drop them, or give --data {}", other.spec));
    }
  }
  auto source = kind.open(o, io);
  // The SSD tier sits next to the store; the memory tier in front of both.
  if (!o.cache_dir.empty()) {
    source = loader::make_ssd_cache(std::move(source), o.cache_dir, parse_size(o.cache_size, "--cache-size"));
  }
  if (!o.cache_mem.empty()) {
    source = loader::make_memory_cache(std::move(source), parse_size(o.cache_mem, "--cache-mem"));
  }
  return source;
}

std::vector<loader::SampleInfo> list_data(loader::SampleSource& source, Io& io, bool quiet) {
  ProgressLine progress(io.err, io.err_is_tty && !quiet);
  progress.show("Listing " + source.describe() + " ...");
  auto samples = source.list();
  progress.clear();
  if (samples.empty()) {
    throw usage_error(fmt::format("the dataset {} is empty", source.describe()),
                      "point --data at a directory, manifest or prefix that holds samples");
  }
  return samples;
}

std::unique_ptr<loader::SampleTransform> make_transform(const WorkOptions& o,
                                                        const std::vector<loader::SampleInfo>& samples) {
  if (o.cpu_us < 0) throw usage_error("--cpu-us must not be negative");
  if (o.decode == "jpeg") {
    if (o.cpu_us > 0) throw usage_error("--cpu-us and --decode jpeg both set the per-sample work", "give one");
    loader::JpegOptions jpeg;
    jpeg.width = jpeg.height = o.image_size;
    jpeg.crop = loader::parse_crop_mode(o.crop);
    jpeg.dct_scaling = !o.full_decode;
    jpeg.filter = loader::parse_resize_filter(o.filter);
    return loader::make_jpeg_transform(jpeg);
  }
  if (o.decode != "none") throw usage_error(fmt::format("--decode {} is not known", o.decode), "use none or jpeg");
  std::uint64_t slot = 0;
  if (!o.sample_bytes.empty()) {
    slot = parse_size(o.sample_bytes, "--sample-bytes");
  } else {
    for (const auto& s : samples) slot = std::max(slot, s.size);
  }
  if (slot == 0) throw usage_error("every sample is empty: nothing to load", "check the dataset, or give --sample-bytes");
  return loader::make_cpu_cost_transform(static_cast<std::size_t>(slot), o.cpu_us);
}

std::unique_ptr<loader::StepRunner> make_step(const DeviceOptions& o, std::uint64_t seed) {
  if (!o.model.empty()) {
    if (o.step_ms != "0") throw usage_error("--model and --step-ms both set the step", "give one");
    return loader::open_torch_step(o.model);
  }
  return loader::make_sleep_step(loader::parse_step_time(o.step_ms), seed);
}

ProbeReport probe_this_host(const Io& io) {
  return make_probe_report(load_topology(std::nullopt), inspect_process(io.host, InspectOptions{true, true}));
}

std::vector<int> rank_worker_cpus(const Io& io, int rank, std::string& cpulist_text) {
  ProbeReport report = probe_this_host(io);
  const auto& ranks = report.budget.ranks;
  if (rank < 0 || rank >= static_cast<int>(ranks.size())) {
    throw usage_error(fmt::format("--rank {} is not a rank of this machine ({} ranks)", rank, ranks.size()),
                      "see the ranks in 'gpufeed probe'");
  }
  const auto& cpus = ranks[static_cast<std::size_t>(rank)].worker_cpus;
  if (cpus.empty()) throw usage_error(fmt::format("rank {} has no worker CPUs in this machine's budget", rank));
  cpulist_text = format_cpulist(cpus);
  return cpus;
}

}  // namespace gpufeed::cli
