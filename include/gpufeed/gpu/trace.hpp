#pragma once
// GPU sample traces (gpufeed.gputrace/v1, JSON Lines): `gpufeed gpu record`
// writes them on a GPU node; `diagnose --gpu-trace` and the replay sampler
// read them anywhere. Line 1 is the envelope with backend, rate and devices;
// every further line is one sample: {"t":0.1,"d":0,"busy":30,"mem":..,"power":..,"temp":..}
// with unmeasured fields left out.
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpufeed/document.hpp"
#include "gpufeed/gpu/sampler.hpp"

namespace gpufeed {

struct GpuTrace {
  std::string backend;
  double sample_hz = 0;
  std::vector<GpuDevice> devices;
  std::vector<GpuSample> samples;  // polled readings, time order
  std::vector<GpuSample> buffered; // the vendor's finer busy samples, when offered
};

std::string write_gpu_trace(const GpuTrace& trace, const HostInfo& host, std::chrono::system_clock::time_point now);
// Throws gpufeed::Error (usage) naming `source` and the line on bad input.
GpuTrace read_gpu_trace(const std::string& text, const std::string& source);

// Replays a recorded trace through the sampler interface: sample(t) returns
// the readings recorded in (previous t, t].
class ReplaySampler : public GpuSampler {
 public:
  explicit ReplaySampler(GpuTrace trace) : trace_(std::move(trace)) {}
  std::string backend() const override { return "replay"; }
  std::vector<GpuDevice> devices() const override { return trace_.devices; }
  std::vector<GpuSample> sample(double t_s) override;
  const GpuTrace& trace() const { return trace_; }

 private:
  GpuTrace trace_;
  size_t next_ = 0;
};

// Samples a GpuSampler on its own thread at `hz` until stopped. `clock_s`
// gives the time stamps (the diagnose window's clock).
class GpuSamplingThread {
 public:
  GpuSamplingThread(GpuSampler& sampler, double hz, std::function<double()> clock_s);
  ~GpuSamplingThread();
  GpuSamplingThread(const GpuSamplingThread&) = delete;
  GpuSamplingThread& operator=(const GpuSamplingThread&) = delete;
  void stop();
  GpuTrace trace() const;  // what was sampled so far

 private:
  void run();
  GpuSampler& sampler_;
  double hz_;
  std::function<double()> clock_s_;
  mutable std::mutex mutex_;
  GpuTrace trace_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gpufeed
