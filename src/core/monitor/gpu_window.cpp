#include "gpufeed/monitor/gpu_window.hpp"

#include <algorithm>

namespace gpufeed {

GpuWindow::GpuWindow(std::string backend, std::vector<GpuDevice> devices, GpuWindowSettings settings)
    : backend_(std::move(backend)), devices_(std::move(devices)), settings_(settings) {}

void GpuWindow::prune(std::deque<GpuSample>& q, double now_s) const {
  while (!q.empty() && (q.size() > settings_.max_samples_per_device || q.front().t_s < now_s - settings_.window_s)) {
    q.pop_front();
  }
}

void GpuWindow::add(const std::vector<GpuSample>& polled) {
  for (const GpuSample& s : polled) {
    GpuDeviceTotals& t = totals_[s.device];
    // Energy: the last power held until this reading (a left Riemann sum, as
    // diagnose integrates its window).
    if (t.last_t_s && t.last_power_w && s.t_s > *t.last_t_s) t.energy_j += *t.last_power_w * (s.t_s - *t.last_t_s);
    t.last_t_s = s.t_s;
    t.last_power_w = s.power_w;
    ++t.samples;
    auto& q = polled_[s.device];
    q.push_back(s);
    prune(q, s.t_s);
  }
}

void GpuWindow::add_buffered(const std::vector<GpuSample>& busy) {
  for (const GpuSample& s : busy) {
    auto& q = buffered_[s.device];
    if (!q.empty() && s.t_s <= q.back().t_s) continue;  // the vendor repeats what it already gave
    q.push_back(s);
    prune(q, s.t_s);
  }
}

namespace {

std::vector<GpuSample> since(const std::deque<GpuSample>& q, double from_s) {
  std::vector<GpuSample> out;
  for (const GpuSample& s : q) {
    if (s.t_s < from_s) continue;
    GpuSample r = s;
    r.t_s -= from_s;
    out.push_back(r);
  }
  return out;
}

}  // namespace

GpuEvidence GpuWindow::evidence(double now_s, std::vector<int> job_devices, std::string job_devices_from) const {
  GpuEvidence g;
  g.backend = backend_;
  g.devices = devices_;
  g.job_devices = std::move(job_devices);
  g.job_devices_from = std::move(job_devices_from);
  const double from = std::max(0.0, now_s - settings_.window_s);
  std::size_t polled = 0;
  for (const auto& [d, q] : polled_) {
    for (auto& s : since(q, from)) g.samples.push_back(s);
    polled = std::max(polled, q.size());
  }
  for (const auto& [d, q] : buffered_) {
    for (auto& s : since(q, from)) g.buffered.push_back(s);
  }
  std::stable_sort(g.samples.begin(), g.samples.end(), [](const GpuSample& a, const GpuSample& b) { return a.t_s < b.t_s; });
  std::stable_sort(g.buffered.begin(), g.buffered.end(), [](const GpuSample& a, const GpuSample& b) { return a.t_s < b.t_s; });
  const double span = now_s - from;
  g.sample_hz = span > 0 && polled > 1 ? static_cast<double>(polled) / span : 0;
  return g;
}

std::map<int, DeviceActivity> GpuWindow::activity(double now_s) const {
  const double from = std::max(0.0, now_s - settings_.window_s);
  std::map<int, DeviceActivity> out;
  static const std::deque<GpuSample> none;
  for (const GpuDevice& d : devices_) {
    auto p = polled_.find(d.index);
    auto b = buffered_.find(d.index);
    out[d.index] = analyse_device(since(p == polled_.end() ? none : p->second, from),
                                  since(b == buffered_.end() ? none : b->second, from), d.index);
  }
  return out;
}

std::size_t GpuWindow::samples_held() const {
  std::size_t n = 0;
  for (const auto& [d, q] : polled_) n += q.size();
  for (const auto& [d, q] : buffered_) n += q.size();
  return n;
}

}  // namespace gpufeed
