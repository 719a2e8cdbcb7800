#include "tune_measure.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "gpufeed/loader/basic_steps.hpp"
#include "gpufeed/tune/profile.hpp"

namespace gpufeed::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Accesses a storage level needs before its time budget may end it (within
// three budgets): the model takes each level's whole latency distribution,
// and a level of three samples read in one stall is no distribution.
constexpr std::uint64_t kMinSamplesPerLevel = 12;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Per-sample CPU work: the transform on real samples, one thread, so the
// figure is the CPU time one worker pays.
tune::Distribution measure_cpu(const MeasureRequest& r) {
  const auto& samples = *r.samples;
  const std::size_t n = std::min<std::size_t>(samples.size(), 24);
  std::vector<std::vector<std::byte>> inputs(n);
  for (std::size_t i = 0; i < n; ++i) r.source->read(samples[i * samples.size() / n], inputs[i]);
  std::vector<std::byte> out(r.transform->output_bytes());
  std::vector<double> ms;
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < n; ++i) {
      const auto t = Clock::now();
      r.transform->apply(samples[i * samples.size() / n].key, inputs[i], out);
      ms.push_back(ms_since(t));
    }
  }
  return tune::Distribution(std::move(ms));
}

double measure_memcpy_gbps() {
  constexpr std::size_t kBytes = 64 << 20;
  std::vector<std::byte> a(kBytes, std::byte{1}), b(kBytes);
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    const auto t = Clock::now();
    std::memcpy(b.data(), a.data(), kBytes);
    best = std::max(best, static_cast<double>(kBytes) / (ms_since(t) * 1e6));
  }
  return best;
}

}  // namespace


Measured measure_for_tune(const MeasureRequest& r) {
  Measured m;
  for (const auto& s : *r.samples) m.dataset_bytes += s.size;
  m.mean_sample_bytes = static_cast<double>(m.dataset_bytes) / static_cast<double>(std::max<std::size_t>(r.samples->size(), 1));

  loader::StorageProbeOptions storage;
  storage.concurrency.clear();
  for (int c = 1; c <= std::max(1, r.max_concurrency); c *= 2) storage.concurrency.push_back(c);
  if (storage.concurrency.back() < r.max_concurrency) storage.concurrency.push_back(r.max_concurrency);
  storage.per_level = std::chrono::milliseconds(static_cast<long>(r.seconds_per_level * 1000));
  storage.max_samples_per_level = 400;
  storage.min_samples_per_level = kMinSamplesPerLevel;
  storage.stop = r.stop;
  storage.on_level = [&](const loader::StorageLevel& l) {
    if (r.progress) {
      const auto access = loader::summarise_latencies(loader::access_latencies(l, r.access));
      r.progress(fmt::format("storage at concurrency {}: {} p50 {:.2f} ms, p99 {:.2f} ms{}", l.concurrency,
                             loader::describe(r.access), access.p50_ms, access.p99_ms,
                             l.ran_on ? fmt::format(" ({} samples: ran {:.1f} s, past its {:g} s, for at least {})",
                                                    l.samples, l.wall_s, r.seconds_per_level, kMinSamplesPerLevel)
                                      : ""));
    }
  };
  m.storage = loader::measure_storage(*r.source, *r.samples, storage);
  for (const auto& level : m.storage.levels) {
    // Each access as the job makes it: its stats and opens, then the read.
    if (!level.accesses.empty()) {
      m.workload.storage.levels.push_back({level.concurrency, tune::Distribution(loader::access_latencies(level, r.access))});
    }
  }
  if (const int pooled = tune::pool_where_faster_under_load(m.workload.storage); pooled > 0 && r.progress) {
    r.progress(fmt::format("storage: {} level{} answered faster than a lower one (noise of a short measurement): pooled "
                           "with {} neighbour{}, so the model's latency rises with load",
                           pooled, pooled == 1 ? "" : "s", pooled == 1 ? "its" : "their", pooled == 1 ? "" : "s"));
  }

  m.workload.cpu_ms = measure_cpu(r);
  m.cpu_mean_ms = m.workload.cpu_ms.mean();
  if (r.progress) r.progress(fmt::format("CPU per sample ({}): mean {:.3f} ms", r.transform->describe(), m.cpu_mean_ms));

  if (r.step) {  // a model: time it on a zero batch
    std::vector<std::byte> batch(r.transform->output_bytes() * static_cast<std::size_t>(r.batch_size));
    loader::StepInput in{batch.data(), batch.data(), batch.size(), r.batch_size, r.transform->sample_shape()};
    r.step->run(in);  // warm-up
    std::vector<double> ms;
    for (int i = 0; i < 5; ++i) {
      const auto t = Clock::now();
      r.step->run(in);
      ms.push_back(ms_since(t));
    }
    m.workload.step_ms = tune::Distribution(std::move(ms));
  } else {
    m.workload.step_ms = r.step_ms;
  }
  m.step_mean_ms = m.workload.step_ms.mean();

  m.memcpy_gb_per_s = measure_memcpy_gbps();
  m.workload.batch_size = r.batch_size;
  m.workload.batches_per_epoch = r.samples->size() / static_cast<std::size_t>(std::max(1, r.batch_size));  // drop_last
  m.workload.batch_bytes = static_cast<double>(r.transform->output_bytes()) * r.batch_size;
  m.workload.pin_gb_per_s = m.memcpy_gb_per_s;
  return m;
}

}  // namespace gpufeed::cli
