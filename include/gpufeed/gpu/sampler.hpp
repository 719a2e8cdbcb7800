#pragma once
// GPU activity behind one interface (like nvtop's vendor table): NVML and
// rocm-smi are loaded at run time by their adapters (src/gpu/), a replay
// sampler reads a recorded trace, and tests use a fake. Every metric is
// optional: a failed reading empties that field, never the sample.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpufeed {

struct GpuDevice {
  int index = 0;                 // the vendor library's device index
  std::string vendor;            // "NVIDIA", "AMD", or what a trace says
  std::string name;              // "NVIDIA H200"; may be empty
  std::string bus_id;            // "0000:41:00.0" (lower case, 4-digit domain); may be empty
  std::optional<std::uint64_t> memory_total_bytes;
};

struct GpuSample {
  double t_s = 0;                // seconds since sampling started (monotonic)
  int device = 0;                // GpuDevice::index
  std::optional<double> busy_pct;            // vendor "utilization"/"busy" %
  std::optional<std::uint64_t> memory_used_bytes;
  std::optional<double> power_w;
  std::optional<double> temperature_c;
};

struct GpuProcess {
  int pid = 0;
  std::optional<std::uint64_t> memory_bytes;
};

class GpuSampler {
 public:
  virtual ~GpuSampler() = default;
  virtual std::string backend() const = 0;  // "nvml", "rocm-smi", "replay", "fake"
  virtual std::vector<GpuDevice> devices() const = 0;
  // One reading of every device, stamped t_s.
  virtual std::vector<GpuSample> sample(double t_s) = 0;
  // Busy samples the device buffered since the last call, finer than our
  // polling (NVML's nvmlDeviceGetSamples); empty when not supported.
  virtual std::vector<GpuSample> buffered_busy(int /*device*/, double /*t_s*/) { return {}; }
  // Processes using the device, where the library tells.
  virtual std::vector<GpuProcess> processes(int /*device*/) { return {}; }
};

// What a vendor's "busy %" means, for the report and docs/gpu.md.
std::string busy_meaning(const std::string& backend);

}  // namespace gpufeed
