#pragma once
// Turns `gpufeed bench` options into the loader's parts: the store (local,
// S3 or synthetic) with its cache tiers, the per-sample transform, the device
// backend and the step. No CLI11 here; tune reuses it.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app.hpp"
#include "gpufeed/app/loader_options.hpp"
#include "gpufeed/app/tune_session.hpp"
#include "gpufeed/loader/device_backend.hpp"
#include "gpufeed/loader/pipeline.hpp"
#include "gpufeed/loader/sample_source.hpp"
#include "gpufeed/loader/step.hpp"
#include "gpufeed/loader/transform.hpp"
#include "gpufeed/probe_report.hpp"

namespace gpufeed::cli {

using app::DataOptions;
using app::DeviceOptions;
using app::WorkOptions;

std::unique_ptr<loader::SampleSource> open_data(const DataOptions& o, const Io& io);
// Lists the store, saying so on a terminal when it takes a while.
std::vector<loader::SampleInfo> list_data(loader::SampleSource& source, Io& io, bool quiet);
std::unique_ptr<loader::SampleTransform> make_transform(const WorkOptions& o,
                                                        const std::vector<loader::SampleInfo>& samples);
using app::parse_device;
std::unique_ptr<loader::StepRunner> make_step(const DeviceOptions& o, std::uint64_t seed);

// This machine as probe sees it (topology, this process's limits, budget).
ProbeReport probe_this_host(const Io& io);

// The CPUs of `rank`'s workers from probe's budget (NUMA-local to its GPU).
std::vector<int> rank_worker_cpus(const Io& io, int rank, std::string& cpulist_text);

}  // namespace gpufeed::cli
