#include "gpufeed/loader/storage_table.hpp"

#include <algorithm>
#include <mutex>
#include <thread>

#include "gpufeed/stats.hpp"

namespace gpufeed::loader {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct LevelRecorder {
  std::mutex mu;
  std::vector<double> stat, open, read;
  std::vector<StorageLevel::Access> accesses;
  std::uint64_t samples = 0, bytes = 0, errors = 0;
};

}  // namespace

OpLatency summarise_latencies(std::vector<double> ms) {
  OpLatency o;
  if (ms.empty()) return o;
  std::sort(ms.begin(), ms.end());
  o.count = ms.size();
  double sum = 0;
  for (double v : ms) sum += v;
  o.mean_ms = sum / static_cast<double>(ms.size());
  o.p50_ms = quantile_sorted(ms, 0.50);
  o.p95_ms = quantile_sorted(ms, 0.95);
  o.p99_ms = quantile_sorted(ms, 0.99);
  o.max_ms = ms.back();
  return o;
}

std::string describe(const AccessPattern& a) {
  if (a == AccessPattern{1, 0}) return "stat-open-read";
  if (a == AccessPattern{0, 0}) return "open-read";
  std::string out;
  if (a.stats > 0) out += std::to_string(a.stats) + " stat + ";
  out += std::to_string(1 + a.extra_opens) + " open + read";
  return out;
}

std::vector<double> access_latencies(const StorageLevel& level, const AccessPattern& pattern) {
  std::vector<double> out;
  out.reserve(level.accesses.size());
  for (const auto& a : level.accesses) out.push_back(pattern.stats * a.stat_ms + pattern.extra_opens * a.open_ms + a.read_ms);
  std::sort(out.begin(), out.end());
  return out;
}

StorageTable measure_storage(SampleSource& source, const std::vector<SampleInfo>& samples,
                             const StorageProbeOptions& options) {
  StorageTable table;
  table.source = source.describe();
  table.storage_type = source.storage_type();
  table.dataset_samples = samples.size();
  for (const auto& s : samples) table.dataset_bytes += s.size;
  if (samples.empty()) return table;

  std::uint64_t cursor = 0;  // where the next level starts in the dataset
  for (int c : options.concurrency) {
    if (options.stop && options.stop->load()) break;
    LevelRecorder rec;
    std::atomic<std::uint64_t> next{0}, completed{0};
    std::atomic<bool> ran_on{false};
    const auto start = Clock::now();
    const auto deadline = start + options.per_level;
    const auto hard_deadline =
        start + std::chrono::duration_cast<Clock::duration>(options.per_level * std::max(1.0, options.overrun_factor));
    auto worker = [&] {
      std::vector<std::byte> buffer;
      std::vector<double> st, op, rd;
      std::vector<StorageLevel::Access> acc;
      std::uint64_t n = 0, bytes = 0, errors = 0;
      for (;;) {
        const std::uint64_t i = next.fetch_add(1);
        if (i >= options.max_samples_per_level) break;
        const auto now = Clock::now();
        if (now >= deadline) {
          if (now >= hard_deadline || completed.load() >= options.min_samples_per_level) break;
          ran_on = true;
        }
        if (options.stop && options.stop->load()) break;
        const SampleInfo& s = samples[(cursor + i) % samples.size()];
        try {
          auto t = Clock::now();
          source.stat(s);
          st.push_back(ms_since(t));
          t = Clock::now();
          source.open(s);
          op.push_back(ms_since(t));
          t = Clock::now();
          source.read(s, buffer);
          rd.push_back(ms_since(t));
          acc.push_back({st.back(), op.back(), rd.back()});
          bytes += buffer.size();
          ++n;
          ++completed;
        } catch (const SampleError&) {
          ++errors;  // a bad sample is not a storage figure; counted
        }
      }
      std::lock_guard lock(rec.mu);
      rec.stat.insert(rec.stat.end(), st.begin(), st.end());
      rec.open.insert(rec.open.end(), op.begin(), op.end());
      rec.read.insert(rec.read.end(), rd.begin(), rd.end());
      rec.accesses.insert(rec.accesses.end(), acc.begin(), acc.end());
      rec.samples += n;
      rec.bytes += bytes;
      rec.errors += errors;
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < c; ++t) threads.emplace_back(worker);
    for (auto& t : threads) t.join();

    StorageLevel level;
    level.concurrency = c;
    level.wall_s = ms_since(start) / 1e3;
    level.stat = summarise_latencies(std::move(rec.stat));
    level.open = summarise_latencies(std::move(rec.open));
    std::sort(rec.read.begin(), rec.read.end());
    level.read_ms = rec.read;
    level.accesses = std::move(rec.accesses);
    level.read = summarise_latencies(std::move(rec.read));
    level.samples = rec.samples;
    level.bytes = rec.bytes;
    level.errors = rec.errors;
    level.mb_per_s = level.wall_s > 0 ? static_cast<double>(rec.bytes) / 1e6 / level.wall_s : 0;
    level.samples_per_s = level.wall_s > 0 ? static_cast<double>(rec.samples) / level.wall_s : 0;
    level.ran_on = ran_on.load();
    const std::uint64_t used = std::min<std::uint64_t>(next.load(), options.max_samples_per_level);
    cursor += used;
    if (cursor > samples.size()) table.samples_reused = true;
    if (options.on_level) options.on_level(level);
    table.levels.push_back(level);
  }
  return table;
}

}  // namespace gpufeed::loader
