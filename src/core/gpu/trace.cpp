#include "gpufeed/gpu/trace.hpp"

#include <chrono>
#include <sstream>

#include <fmt/format.h>

#include "gpufeed/error.hpp"

namespace gpufeed {
namespace {

Json sample_json(const GpuSample& s, bool buffered) {
  Json j = {{"t", s.t_s}, {"d", s.device}};
  if (buffered) j["buffered"] = true;
  if (s.busy_pct) j["busy"] = *s.busy_pct;
  if (s.memory_used_bytes) j["mem"] = *s.memory_used_bytes;
  if (s.power_w) j["power"] = *s.power_w;
  if (s.temperature_c) j["temp"] = *s.temperature_c;
  return j;
}

}  // namespace

std::string write_gpu_trace(const GpuTrace& trace, const HostInfo& host, std::chrono::system_clock::time_point now) {
  Json devices = Json::array();
  for (const auto& d : trace.devices) {
    devices.push_back({{"index", d.index}, {"vendor", d.vendor}, {"name", d.name}, {"bus_id", d.bus_id},
                       {"memory_total_bytes", d.memory_total_bytes ? Json(*d.memory_total_bytes) : Json(nullptr)}});
  }
  Json header = make_document("gputrace", host,
                              Json{{"backend", trace.backend}, {"sample_hz", trace.sample_hz}, {"devices", devices}}, now);
  std::string out = dump_json(header) + "\n";
  for (const auto& s : trace.samples) out += dump_json(sample_json(s, false)) + "\n";
  for (const auto& s : trace.buffered) out += dump_json(sample_json(s, true)) + "\n";
  return out;
}

GpuTrace read_gpu_trace(const std::string& text, const std::string& source) {
  GpuTrace trace;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  auto bad = [&](const std::string& why) {
    return usage_error(fmt::format("GPU trace {} line {}: {}", source, number, why),
                       "give a file written by 'gpufeed gpu record'");
  };
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    Json j;
    try {
      j = Json::parse(line);
    } catch (const std::exception&) {
      throw bad("not JSON");
    }
    try {
      if (number == 1) {
        if (j.value("schema", "") != schema_id("gputrace")) throw bad("not a gpufeed.gputrace/v1 file");
        trace.backend = j.at("backend").get<std::string>();
        trace.sample_hz = j.at("sample_hz").get<double>();
        for (const auto& d : j.at("devices")) {
          GpuDevice dev;
          dev.index = d.at("index").get<int>();
          dev.vendor = d.value("vendor", "");
          dev.name = d.value("name", "");
          dev.bus_id = d.value("bus_id", "");
          if (d.contains("memory_total_bytes") && !d["memory_total_bytes"].is_null()) {
            dev.memory_total_bytes = d["memory_total_bytes"].get<std::uint64_t>();
          }
          trace.devices.push_back(dev);
        }
        continue;
      }
      GpuSample s;
      s.t_s = j.at("t").get<double>();
      s.device = j.at("d").get<int>();
      if (j.contains("busy")) s.busy_pct = j["busy"].get<double>();
      if (j.contains("mem")) s.memory_used_bytes = j["mem"].get<std::uint64_t>();
      if (j.contains("power")) s.power_w = j["power"].get<double>();
      if (j.contains("temp")) s.temperature_c = j["temp"].get<double>();
      (j.value("buffered", false) ? trace.buffered : trace.samples).push_back(s);
    } catch (const Error&) {
      throw;
    } catch (const std::exception&) {
      throw bad("a field is missing or has the wrong type");
    }
  }
  if (number == 0) throw bad("empty file");
  return trace;
}

std::vector<GpuSample> ReplaySampler::sample(double t_s) {
  std::vector<GpuSample> out;
  while (next_ < trace_.samples.size() && trace_.samples[next_].t_s <= t_s) out.push_back(trace_.samples[next_++]);
  return out;
}

GpuSamplingThread::GpuSamplingThread(GpuSampler& sampler, double hz, std::function<double()> clock_s)
    : sampler_(sampler), hz_(hz), clock_s_(std::move(clock_s)) {
  trace_.backend = sampler_.backend();
  trace_.sample_hz = hz_;
  trace_.devices = sampler_.devices();
  thread_ = std::thread([this] { run(); });
}

GpuSamplingThread::~GpuSamplingThread() { stop(); }

void GpuSamplingThread::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

GpuTrace GpuSamplingThread::trace() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return trace_;
}

void GpuSamplingThread::run() {
  const auto period = std::chrono::duration<double>(1.0 / hz_);
  auto next = std::chrono::steady_clock::now();
  while (!stop_.load()) {
    const double t = clock_s_();
    auto polled = sampler_.sample(t);
    std::vector<GpuSample> fine;
    for (const auto& d : trace_.devices) {
      auto b = sampler_.buffered_busy(d.index, t);
      fine.insert(fine.end(), b.begin(), b.end());
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      trace_.samples.insert(trace_.samples.end(), polled.begin(), polled.end());
      trace_.buffered.insert(trace_.buffered.end(), fine.begin(), fine.end());
    }
    next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
    // Sleep in short steps so stop() is prompt.
    while (!stop_.load() && std::chrono::steady_clock::now() < next) {
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          next - std::chrono::steady_clock::now(), std::chrono::milliseconds(20)));
    }
  }
}

}  // namespace gpufeed
