#include "gpufeed/gpu/activity.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "gpufeed/gpu/vendors.hpp"

namespace gpufeed {
namespace {

// The lag (in samples) with the strongest autocorrelation peak of x, with
// sub-sample refinement; nullopt when the signal is flat or not periodic.
std::optional<std::pair<double, double>> dominant_period(const std::vector<double>& x) {
  const size_t n = x.size();
  if (n < 8) return std::nullopt;
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(n);
  double var = 0;
  for (double v : x) var += (v - mean) * (v - mean);
  if (var < 1e-9) return std::nullopt;
  std::vector<double> acf(n / 2 + 1, 0.0);
  for (size_t lag = 0; lag < acf.size(); ++lag) {
    double s = 0;
    for (size_t i = 0; i + lag < n; ++i) s += (x[i] - mean) * (x[i + lag] - mean);
    acf[lag] = s / var;
  }
  // The first local maximum after the autocorrelation has gone negative is
  // the period; later peaks are its multiples.
  size_t lag = 1;
  while (lag < acf.size() && acf[lag] > 0) ++lag;
  size_t best = 0;
  for (; lag + 1 < acf.size(); ++lag) {
    if (acf[lag] > 0 && acf[lag] >= acf[lag - 1] && acf[lag] >= acf[lag + 1]) {
      best = lag;
      break;
    }
  }
  if (best == 0 || acf[best] < 0.3) return std::nullopt;
  // Parabolic interpolation through the peak and its neighbours.
  const double a = acf[best - 1], b = acf[best], c = acf[best + 1];
  const double denom = a - 2 * b + c;
  const double shift = std::fabs(denom) > 1e-12 ? 0.5 * (a - c) / denom : 0.0;
  return std::make_pair(static_cast<double>(best) + std::clamp(shift, -0.5, 0.5), b);
}

}  // namespace

GpuActivity analyse_gpu(const std::vector<GpuSample>& samples, double idle_pct) {
  GpuActivity a;
  if (samples.empty()) return a;
  a.device = samples.front().device;
  a.samples = static_cast<int>(samples.size());
  a.duration_s = samples.back().t_s - samples.front().t_s;

  std::vector<double> busy;
  std::vector<double> t;
  for (const auto& s : samples) {
    if (!s.busy_pct) continue;
    busy.push_back(*s.busy_pct);
    t.push_back(s.t_s);
  }
  if (!busy.empty()) {
    a.busy_fraction = std::accumulate(busy.begin(), busy.end(), 0.0) / static_cast<double>(busy.size()) / 100.0;
    // Idle gaps: a run of idle samples lasts from its first sample to the
    // next busy one.
    for (size_t i = 0; i < busy.size();) {
      if (busy[i] >= idle_pct) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < busy.size() && busy[j] < idle_pct) ++j;
      if (i > 0 && j < busy.size()) a.idle_gaps_s.push_back(t[j] - t[i]);  // whole gaps only
      i = j;
    }
    if (!a.idle_gaps_s.empty()) {
      a.mean_idle_gap_s = std::accumulate(a.idle_gaps_s.begin(), a.idle_gaps_s.end(), 0.0) /
                          static_cast<double>(a.idle_gaps_s.size());
      for (double g : a.idle_gaps_s) {
        const double ms = std::max(g * 1e3, 1.0);
        const int k = static_cast<int>(std::floor(std::log2(ms)));
        auto it = std::find_if(a.gap_histogram.begin(), a.gap_histogram.end(),
                               [&](const GapBucket& b) { return b.from_ms == std::ldexp(1.0, k); });
        if (it == a.gap_histogram.end()) {
          a.gap_histogram.push_back({std::ldexp(1.0, k), std::ldexp(1.0, k + 1), 0});
          it = a.gap_histogram.end() - 1;
        }
        ++it->count;
      }
      std::sort(a.gap_histogram.begin(), a.gap_histogram.end(),
                [](const GapBucket& x, const GapBucket& y) { return x.from_ms < y.from_ms; });
    }
    if (busy.size() >= 8 && t.back() > t.front()) {
      const double dt = (t.back() - t.front()) / static_cast<double>(busy.size() - 1);
      if (auto p = dominant_period(busy)) {
        a.period_s = p->first * dt;
        a.period_strength = p->second;
      }
    }
  }
  double energy = 0, power_time = 0;
  for (size_t i = 1; i < samples.size(); ++i) {
    const auto& p = samples[i - 1];
    const auto& q = samples[i];
    if (p.power_w && q.power_w && q.t_s > p.t_s) {
      energy += 0.5 * (*p.power_w + *q.power_w) * (q.t_s - p.t_s);
      power_time += q.t_s - p.t_s;
    }
  }
  if (power_time > 0) {
    a.energy_j = energy;
    a.mean_power_w = energy / power_time;
  }
  return a;
}

DeviceActivity analyse_device(const std::vector<GpuSample>& polled_all, const std::vector<GpuSample>& buffered_all,
                              int device, double idle_pct) {
  std::vector<GpuSample> polled, fine;
  for (const auto& s : polled_all) {
    if (s.device == device) polled.push_back(s);
  }
  for (const auto& s : buffered_all) {
    if (s.device == device && s.busy_pct) fine.push_back(s);
  }
  DeviceActivity d;
  d.fine_grained = fine.size() > polled.size();
  d.activity = analyse_gpu(d.fine_grained ? fine : polled, idle_pct);
  if (d.fine_grained) {
    const GpuActivity p = analyse_gpu(polled, idle_pct);
    d.activity.energy_j = p.energy_j;
    d.activity.mean_power_w = p.mean_power_w;
  }
  d.activity.device = device;
  return d;
}

std::optional<double> samples_per_joule(const GpuActivity& a, double samples_per_s) {
  if (!a.mean_power_w || *a.mean_power_w <= 0 || samples_per_s <= 0) return std::nullopt;
  return samples_per_s / *a.mean_power_w;
}

std::optional<std::vector<int>> parse_visible_devices(const std::string& value) {
  std::vector<int> out;
  size_t i = 0;
  while (i < value.size()) {
    size_t j = value.find(',', i);
    if (j == std::string::npos) j = value.size();
    std::string item = value.substr(i, j - i);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) {
      if (item.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;  // a UUID or MIG id
      out.push_back(std::stoi(item));
    }
    i = j + 1;
  }
  return out;
}

std::string busy_meaning(const std::string& backend) {
  if (const GpuVendor* vendor = vendor_by_sampler(backend)) return std::string(vendor->busy_meaning);
  return "busy % as recorded by the trace's backend";
}

}  // namespace gpufeed
