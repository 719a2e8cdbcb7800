#pragma once
// A scripted GpuSampler for unit tests: busy % follows a duty cycle, and
// chosen fields fail on chosen calls.
#include <cmath>
#include <functional>

#include "gpufeed/gpu/sampler.hpp"

namespace gpufeed::testing {

// Busy 100% for `busy_ms` of every `period_ms`, idle otherwise.
inline std::function<double(double)> duty_cycle(double busy_ms, double period_ms) {
  return [=](double t_s) { return std::fmod(t_s * 1e3, period_ms) < busy_ms ? 100.0 : 0.0; };
}

class FakeGpuSampler : public GpuSampler {
 public:
  FakeGpuSampler(int devices, std::function<double(double)> busy) : busy_(std::move(busy)) {
    for (int i = 0; i < devices; ++i) {
      devices_.push_back({i, "NVIDIA", "Fake H200", "0000:4" + std::to_string(i) + ":00.0", 141ULL << 30});
    }
  }
  std::string backend() const override { return "fake"; }
  std::vector<GpuDevice> devices() const override { return devices_; }
  std::vector<GpuSample> sample(double t_s) override {
    ++calls_;
    std::vector<GpuSample> out;
    for (const auto& d : devices_) {
      GpuSample s;
      s.t_s = t_s;
      s.device = d.index;
      s.busy_pct = busy_(t_s);
      s.memory_used_bytes = 10ULL << 30;
      if (!(fail_power_every > 0 && calls_ % fail_power_every == 0)) s.power_w = 100 + 5 * *s.busy_pct;
      out.push_back(s);
    }
    return out;
  }
  std::vector<GpuProcess> processes(int) override { return processes_; }

  int fail_power_every = 0;  // every Nth call has no power reading
  std::vector<GpuProcess> processes_;

 private:
  std::vector<GpuDevice> devices_;
  std::function<double(double)> busy_;
  int calls_ = 0;
};

// Samples `sampler` at `hz` for `seconds` of simulated time, without threads.
inline std::vector<GpuSample> sample_for(GpuSampler& sampler, double hz, double seconds) {
  std::vector<GpuSample> out;
  for (int i = 0; i < static_cast<int>(seconds * hz); ++i) {
    auto s = sampler.sample(i / hz);
    out.insert(out.end(), s.begin(), s.end());
  }
  return out;
}

}  // namespace gpufeed::testing
