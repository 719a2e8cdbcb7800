// The simulated step and the library-free transforms (basic_steps.hpp).
#include "gpufeed/loader/basic_steps.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "gpufeed/error.hpp"
#include "gpufeed/setting.hpp"
#include "gpufeed/text.hpp"
#include "gpufeed/loader/sample_source.hpp"
#include "gpufeed/thread_cpu.hpp"

namespace gpufeed::loader {
namespace {

bool parse_ms(std::string_view text, double& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  // An hour per step at most: inf or 1e308 would overflow the sleep.
  return ec == std::errc() && ptr == end && std::isfinite(out) && out >= 0 && out <= 3.6e6;
}

class SleepStep final : public StepRunner {
 public:
  SleepStep(StepTime time, std::uint64_t seed) : time_(time), rng_(seed) {}
  std::string describe() const override {
    if (time_.spread_ms > 0) return fmt::format("simulated step {:g} ms ± {:g} ms", time_.mean_ms, time_.spread_ms);
    return fmt::format("simulated step {:g} ms", time_.mean_ms);
  }
  void run(const StepInput&) override {
    double ms = time_.mean_ms;
    if (time_.spread_ms > 0) {
      std::normal_distribution<double> dist(time_.mean_ms, time_.spread_ms);
      ms = std::max(0.0, dist(rng_));
    }
    if (ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
  }

 private:
  StepTime time_;
  std::mt19937_64 rng_;
};

void copy_into_slot(std::span<const std::byte> in, std::span<std::byte> out) {
  const std::size_t n = std::min(in.size(), out.size());
  if (n) std::memcpy(out.data(), in.data(), n);
  if (n < out.size()) std::memset(out.data() + n, 0, out.size() - n);
}

class CopyTransform : public SampleTransform {
 public:
  explicit CopyTransform(std::size_t slot_bytes) : slot_bytes_(slot_bytes) {}
  std::string describe() const override { return "no decode (bytes copied into the batch)"; }
  std::size_t output_bytes() const override { return slot_bytes_; }
  std::vector<std::int64_t> sample_shape() const override { return {static_cast<std::int64_t>(slot_bytes_)}; }
  void apply(const std::string&, std::span<const std::byte> in, std::span<std::byte> out) override {
    copy_into_slot(in, out);
  }
  bool in_place() const override { return true; }
  void finish_in_place(const std::string&, std::span<std::byte> slot, std::size_t filled) override {
    if (filled < slot.size()) std::memset(slot.data() + filled, 0, slot.size() - filled);
  }

 private:
  std::size_t slot_bytes_;
};

// A fixed amount of CPU work, not a wall-clock spin: like a real decode, it
// takes longer when workers outnumber cores. Calibrated once per process.
volatile std::uint64_t g_sink = 0;

std::uint64_t spin(std::uint64_t iterations) {
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (std::uint64_t i = 0; i < iterations; ++i) x = (x ^ (x >> 31)) * 0xBF58476D1CE4E5B9ull + i;
  return x;
}

double iterations_per_us() {
  static std::once_flag once;
  static double rate = 0;
  std::call_once(once, [] {
    std::vector<double> rates;
    constexpr std::uint64_t kProbe = 2'000'000;
    for (int i = 0; i < 5; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      g_sink = g_sink + spin(kProbe);
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      rates.push_back(static_cast<double>(kProbe) / std::max(us, 1e-3));
    }
    std::sort(rates.begin(), rates.end());
    rate = rates.back();  // the least disturbed probe
  });
  return rate;
}

class CpuCostTransform final : public CopyTransform {
 public:
  CpuCostTransform(std::size_t slot_bytes, double cpu_us)
      : CopyTransform(slot_bytes), cpu_us_(cpu_us),
        iterations_(static_cast<std::uint64_t>(cpu_us * iterations_per_us())) {}
  std::string describe() const override { return fmt::format("{:g} us of CPU work per sample", cpu_us_); }
  void apply(const std::string& key, std::span<const std::byte> in, std::span<std::byte> out) override {
    g_sink = g_sink + spin(iterations_);
    CopyTransform::apply(key, in, out);
  }
  void finish_in_place(const std::string& key, std::span<std::byte> slot, std::size_t filled) override {
    g_sink = g_sink + spin(iterations_);
    CopyTransform::finish_in_place(key, slot, filled);
  }

 private:
  double cpu_us_;
  std::uint64_t iterations_;
};

class ExtraCpuTransform final : public SampleTransform {
 public:
  ExtraCpuTransform(std::unique_ptr<SampleTransform> inner, double extra_us)
      : inner_(std::move(inner)), extra_us_(extra_us),
        iterations_(static_cast<std::uint64_t>(extra_us * iterations_per_us())) {}
  std::string describe() const override { return fmt::format("{} + {:g} us of CPU work", inner_->describe(), extra_us_); }
  std::size_t output_bytes() const override { return inner_->output_bytes(); }
  std::vector<std::int64_t> sample_shape() const override { return inner_->sample_shape(); }
  void apply(const std::string& key, std::span<const std::byte> in, std::span<std::byte> out) override {
    inner_->apply(key, in, out);
    g_sink = g_sink + spin(iterations_);
  }
  bool in_place() const override { return inner_->in_place(); }
  void finish_in_place(const std::string& key, std::span<std::byte> slot, std::size_t filled) override {
    inner_->finish_in_place(key, slot, filled);
    g_sink = g_sink + spin(iterations_);
  }

 private:
  std::unique_ptr<SampleTransform> inner_;
  double extra_us_;
  std::uint64_t iterations_;
};

// Spins until this thread has spent `ns` more of CPU time.
void spin_cpu_ns(std::uint64_t ns) {
  const std::uint64_t until = thread_cpu_ns() + ns;
  while (thread_cpu_ns() < until) g_sink = g_sink + spin(2000);
}

// The inner transform's CPU for this sample (its thread's CPU time,
// whatever else shared the core meanwhile), times `factor - 1`.
std::uint64_t extra_ns(double factor, std::uint64_t since) {
  return static_cast<std::uint64_t>((factor - 1) * static_cast<double>(thread_cpu_ns() - since));
}

class CpuScaleTransform final : public SampleTransform {
 public:
  CpuScaleTransform(std::unique_ptr<SampleTransform> inner, double factor) : inner_(std::move(inner)), factor_(factor) {}
  std::string describe() const override { return fmt::format("{}, its CPU x{:.2f}", inner_->describe(), factor_); }
  std::size_t output_bytes() const override { return inner_->output_bytes(); }
  std::vector<std::int64_t> sample_shape() const override { return inner_->sample_shape(); }
  void apply(const std::string& key, std::span<const std::byte> in, std::span<std::byte> out) override {
    const std::uint64_t t0 = thread_cpu_ns();
    inner_->apply(key, in, out);
    spin_cpu_ns(extra_ns(factor_, t0));
  }
  bool in_place() const override { return inner_->in_place(); }
  void finish_in_place(const std::string& key, std::span<std::byte> slot, std::size_t filled) override {
    const std::uint64_t t0 = thread_cpu_ns();
    inner_->finish_in_place(key, slot, filled);
    spin_cpu_ns(extra_ns(factor_, t0));
  }

 private:
  std::unique_ptr<SampleTransform> inner_;
  double factor_;
};

class LoopCpuStep final : public StepRunner {
 public:
  LoopCpuStep(std::unique_ptr<StepRunner> inner, double cpu_us)
      : inner_(std::move(inner)), cpu_us_(cpu_us), iterations_(static_cast<std::uint64_t>(cpu_us * iterations_per_us())) {}
  std::string describe() const override { return fmt::format("{:g} us of loop CPU, then {}", cpu_us_, inner_->describe()); }
  void run(const StepInput& in) override {
    g_sink = g_sink + spin(iterations_);
    inner_->run(in);
  }

 private:
  std::unique_ptr<StepRunner> inner_;
  double cpu_us_;
  std::uint64_t iterations_;
};

}  // namespace

void SampleTransform::finish_in_place(const std::string&, std::span<std::byte>, std::size_t) {}

std::size_t SampleSource::read_into(const SampleInfo& s, std::span<std::byte> out) {
  thread_local std::vector<std::byte> scratch;
  read(s, scratch);
  const std::size_t n = std::min(scratch.size(), out.size());
  if (n) std::memcpy(out.data(), scratch.data(), n);
  return n;
}

StepTime parse_step_time(const std::string& text) {
  StepTime t;
  const auto colon = text.find(':');
  const std::string_view mean = std::string_view(text).substr(0, colon);
  const bool ok = parse_ms(mean, t.mean_ms) &&
                  (colon == std::string::npos || parse_ms(std::string_view(text).substr(colon + 1), t.spread_ms));
  if (!ok) {
    throw usage_error(fmt::format("{} \"{}\" is not a step time", spell(Setting::step_ms), printable(text)),
                      "give milliseconds from 0 to 3600000, e.g. 40, or a mean and spread, e.g. 40:5");
  }
  return t;
}

std::unique_ptr<StepRunner> make_sleep_step(StepTime time, std::uint64_t seed) {
  return std::make_unique<SleepStep>(time, seed);
}

std::unique_ptr<SampleTransform> make_copy_transform(std::size_t slot_bytes) {
  return std::make_unique<CopyTransform>(slot_bytes);
}

std::unique_ptr<SampleTransform> make_cpu_cost_transform(std::size_t slot_bytes, double cpu_us) {
  if (cpu_us <= 0) return make_copy_transform(slot_bytes);
  return std::make_unique<CpuCostTransform>(slot_bytes, cpu_us);
}

std::unique_ptr<SampleTransform> with_extra_cpu(std::unique_ptr<SampleTransform> inner, double extra_us) {
  if (extra_us <= 0) return inner;
  return std::make_unique<ExtraCpuTransform>(std::move(inner), extra_us);
}

std::unique_ptr<SampleTransform> with_cpu_scale(std::unique_ptr<SampleTransform> inner, double factor) {
  if (!(factor > 1)) return inner;
  return std::make_unique<CpuScaleTransform>(std::move(inner), factor);
}

std::unique_ptr<StepRunner> with_loop_cpu(std::unique_ptr<StepRunner> inner, double cpu_us) {
  if (cpu_us <= 0) return inner;
  return std::make_unique<LoopCpuStep>(std::move(inner), cpu_us);
}

}  // namespace gpufeed::loader
