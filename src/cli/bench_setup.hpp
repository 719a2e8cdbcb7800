#pragma once
// Turns `gpufeed bench` options into the loader's parts: the store (local,
// S3 or synthetic) with its cache tiers, the per-sample transform, the device
// backend and the step. No CLI11 here; tune reuses it.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app.hpp"
#include "gpufeed/loader/device_backend.hpp"
#include "gpufeed/loader/pipeline.hpp"
#include "gpufeed/loader/sample_source.hpp"
#include "gpufeed/loader/step.hpp"
#include "gpufeed/loader/transform.hpp"
#include "gpufeed/probe_report.hpp"

namespace gpufeed::cli {

struct DataOptions {
  std::string data;  // directory, manifest, s3://bucket/prefix or synthetic:...
  std::string s3_endpoint, s3_region, s3_profile;
  int s3_connections = 64;
  std::string cache_mem;         // size, empty: no memory tier
  std::string cache_dir;         // empty: no SSD tier
  std::string cache_size = "10GiB";
};

struct WorkOptions {
  std::string decode = "none";  // none | jpeg
  double cpu_us = 0;
  int image_size = 224;
  std::string crop = "center";
  bool full_decode = false;     // no DCT scaling: decode at full size, as PIL without draft() does
  std::string filter = "fast";  // resize: fast | bilinear | bicubic
  std::string sample_bytes;     // --decode none: slot size; empty: the largest sample
};

struct DeviceOptions {
  std::string device = "auto";
  std::string step_ms = "0";
  std::string model;
};

struct LoaderParts {
  std::unique_ptr<loader::SampleSource> source;
  std::vector<loader::SampleInfo> samples;
  std::unique_ptr<loader::SampleTransform> transform;
  std::unique_ptr<loader::DeviceBackend> device;
  std::string device_why;
  std::unique_ptr<loader::StepRunner> step;
};

std::unique_ptr<loader::SampleSource> open_data(const DataOptions& o, const Io& io);
// Lists the store, saying so on a terminal when it takes a while.
std::vector<loader::SampleInfo> list_data(loader::SampleSource& source, Io& io, bool quiet);
std::unique_ptr<loader::SampleTransform> make_transform(const WorkOptions& o,
                                                        const std::vector<loader::SampleInfo>& samples);
loader::DeviceChoice parse_device(const std::string& text);
std::unique_ptr<loader::StepRunner> make_step(const DeviceOptions& o, std::uint64_t seed);

// This machine as probe sees it (topology, this process's limits, budget).
ProbeReport probe_this_host(const Io& io);

// The CPUs of `rank`'s workers from probe's budget (NUMA-local to its GPU).
std::vector<int> rank_worker_cpus(const Io& io, int rank, std::string& cpulist_text);

}  // namespace gpufeed::cli
