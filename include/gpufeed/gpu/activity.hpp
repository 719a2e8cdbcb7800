#pragma once
// What GPU samples say about feeding: busy fraction, idle gaps, the period
// of the busy signal (autocorrelation), energy. Pure; tested on scripted
// samples.
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/gpu/sampler.hpp"

namespace gpufeed {

struct GapBucket {
  double from_ms = 0;  // [from, to)
  double to_ms = 0;
  int count = 0;
};

struct GpuActivity {
  int device = 0;
  int samples = 0;
  double duration_s = 0;
  std::optional<double> busy_fraction;    // mean busy % / 100
  std::vector<double> idle_gaps_s;        // runs of samples below the idle threshold
  std::vector<GapBucket> gap_histogram;   // log2 buckets of gap length
  std::optional<double> mean_idle_gap_s;
  std::optional<double> period_s;         // of the busy signal, when periodic
  std::optional<double> period_strength;  // autocorrelation at that lag (0..1)
  std::optional<double> energy_j;         // integral of power
  std::optional<double> mean_power_w;
};

// `samples` of one device in time order. Samples below idle_pct count as idle.
GpuActivity analyse_gpu(const std::vector<GpuSample>& samples, double idle_pct = 10.0);

// One device of a recording: analysed from the vendor's finer buffered
// samples when they outnumber the polled ones (they resolve gaps our polling
// blurs); power and energy always come from the polled readings.
struct DeviceActivity {
  GpuActivity activity;
  bool fine_grained = false;
};
DeviceActivity analyse_device(const std::vector<GpuSample>& polled, const std::vector<GpuSample>& buffered,
                              int device, double idle_pct = 10.0);

// Samples per joule, when the job's throughput (samples/s) is known.
std::optional<double> samples_per_joule(const GpuActivity& a, double samples_per_s);

// Which device indices a job uses, from a *_VISIBLE_DEVICES value ("0,2",
// "" = none visible, unset = all). Non-numeric entries (UUIDs) give nullopt.
std::optional<std::vector<int>> parse_visible_devices(const std::string& value);

}  // namespace gpufeed
