#pragma once
// `gpufeed monitor`'s GPU readings: a bounded ring of the sampler's polled
// and buffered samples per device covering the sliding window, and energy
// integrated from power since attach. Gives the window as diagnose's
// GpuEvidence, so the GPU findings evaluate on it. Pure.
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/gpu/activity.hpp"

namespace gpufeed {

struct GpuWindowSettings {
  double window_s = 30;
  std::size_t max_samples_per_device = 4096;  // polled and buffered each: the oldest go first
};

struct GpuDeviceTotals {
  double energy_j = 0;            // integral of polled power since the first reading
  std::uint64_t samples = 0;      // polled readings
  std::optional<double> last_t_s, last_power_w;
};

class GpuWindow {
 public:
  GpuWindow(std::string backend, std::vector<GpuDevice> devices, GpuWindowSettings settings = {});

  void add(const std::vector<GpuSample>& polled);      // in time order; t_s since the monitor started
  void add_buffered(const std::vector<GpuSample>& busy);
  // The last window_s seconds before now_s, re-timed from the window's
  // start (as EvidenceWindow::evidence does).
  GpuEvidence evidence(double now_s, std::vector<int> job_devices, std::string job_devices_from) const;
  // Per device over the window, analysed (analyse_device).
  std::map<int, DeviceActivity> activity(double now_s) const;

  const std::vector<GpuDevice>& devices() const { return devices_; }
  const std::string& backend() const { return backend_; }
  const std::map<int, GpuDeviceTotals>& totals() const { return totals_; }
  std::size_t samples_held() const;

 private:
  void prune(std::deque<GpuSample>& q, double now_s) const;

  std::string backend_;
  std::vector<GpuDevice> devices_;
  GpuWindowSettings settings_;
  std::map<int, std::deque<GpuSample>> polled_, buffered_;
  std::map<int, GpuDeviceTotals> totals_;
};

}  // namespace gpufeed
