#include "gpufeed/loader/bench_report.hpp"

#include <fmt/format.h>

#include "gpufeed/setting.hpp"
#include "gpufeed/units.hpp"

namespace gpufeed::loader {
namespace {

std::string pct(double f) { return fmt::format("{:.1f}%", f * 100); }
double ms(double ns) { return ns / 1e6; }
double quantile_ms(const LatencyHistogram& h, double q) { return ms(h.quantile_ns(q).value_or(0)); }

Json latency_json(const LatencyHistogram& h) {
  Json slots = Json::array();
  for (int k = 0; k < kHistogramSlots; ++k) {
    const auto n = h.slots[static_cast<std::size_t>(k)];
    if (n) slots.push_back({{"log2_ns", k}, {"count", n}});
  }
  return {{"count", h.count},
          {"mean_ms", ms(h.mean_ns())},
          {"p50_ms", quantile_ms(h, 0.5)},
          {"p99_ms", quantile_ms(h, 0.99)},
          {"histogram", slots}};
}

Json op_json(const OpLatency& o) {
  return {{"count", o.count}, {"mean_ms", o.mean_ms}, {"p50_ms", o.p50_ms},
          {"p95_ms", o.p95_ms}, {"p99_ms", o.p99_ms}, {"max_ms", o.max_ms}};
}

Json config_json(const LoaderConfig& c) {
  return {{"workers", c.workers},     {"prefetch_factor", c.prefetch_factor}, {"batch_size", c.batch_size},
          {"io_depth", c.io_depth},   {"pin_memory", c.pin_memory},           {"drop_last", c.drop_last},
          {"shuffle", c.shuffle},     {"skip_bad", c.skip_bad},               {"device_slots", c.device_slots},
          {"mem_budget_bytes", c.mem_budget_bytes ? Json(c.mem_budget_bytes) : Json(nullptr)}};
}

}  // namespace

Json to_json(const BenchReport& r) {
  const auto& f = r.figures;
  const auto& s = r.setup;
  Json tiers = Json::array();
  for (const auto& t : r.tiers) {
    tiers.push_back({{"tier", t.tier}, {"hits", t.hits}, {"misses", t.misses}, {"hit_rate", t.hit_rate()},
                     {"bytes_cached", t.bytes_cached}, {"capacity_bytes", t.capacity_bytes}, {"evictions", t.evictions}});
  }
  Json queue = Json::array();
  for (const auto& q : f.queue) queue.push_back({{"t_s", q.t_s}, {"ready", q.ready}, {"in_flight", q.in_flight}});
  return {
      {"mode", "loader"},
      {"setup",
       {{"source", s.source},
        {"storage_type", s.storage_type},
        {"dataset_samples", s.dataset_samples},
        {"transform", s.transform},
        {"sample_bytes", s.sample_bytes},
        {"device", s.device},
        {"device_detail", s.device_detail},
        {"device_why", s.device_why},
        {"step", s.step},
        {"worker_cpus", s.worker_cpus.empty() ? Json(nullptr) : Json(s.worker_cpus)},
        {"config", config_json(s.config)}}},
      {"throughput",
       {{"samples_per_s", f.samples_per_s},
        {"starvation", f.starvation},
        {"batch_wait_p50_ms", f.batch_wait_p50_ms},
        {"batch_wait_p99_ms", f.batch_wait_p99_ms},
        {"step_mean_ms", f.step_mean_ms},
        {"window_s", f.window_s},
        {"batches", f.batches},
        {"samples", f.samples},
        {"steady_from_start", f.steady_from_start}}},
      {"run",
       {{"wall_s", f.wall_s},
        {"total_batches", f.total_batches},
        {"warmup_batches", f.warmup_batches},
        {"epochs_started", f.epochs_started},
        {"stopped_early", f.stopped_early},
        {"bad_samples", f.bad_samples},
        {"bad_sample_examples", f.bad_sample_keys},
        {"bytes_read", f.bytes_read}}},
      {"fetch_latency", latency_json(f.fetch)},
      {"transform_time", latency_json(f.transform)},
      {"queue", {{"mean_ready", f.mean_ready}, {"max_in_flight", f.max_in_flight}, {"timeline", queue}}},
      {"transfer",
       {{"copies", f.transfer.copies},
        {"bytes", f.transfer.bytes},
        {"busy_s", static_cast<double>(f.transfer.busy_ns) / 1e9},
        {"h2d_gb_per_s", f.h2d_gbps}}},
      {"memory", {{"pinned_bytes", f.pinned_bytes}, {"page_locked", f.page_locked}, {"peak_rss_bytes", r.peak_rss_bytes}}},
      {"cache_tiers", tiers},
      {"notes", r.notes},
  };
}

void render_text(const BenchReport& r, const TextStyle& st, bool verbose, std::ostream& out) {
  const auto& f = r.figures;
  const auto& s = r.setup;
  const auto& c = s.config;
  out << st.heading("gpufeed bench") << "\n";
  out << fmt::format("  {:.0f} samples/s   starvation {}   batch wait p50 {:.2f} ms, p99 {:.2f} ms\n", f.samples_per_s,
                     f.starvation > 0.05 ? st.warn(pct(f.starvation)) : st.good(pct(f.starvation)),
                     f.batch_wait_p50_ms, f.batch_wait_p99_ms);
  out << fmt::format("  {} batches of {} over {:.1f} s steady state ({} warm-up batches excluded{})\n\n", f.batches,
                     c.batch_size, f.window_s, f.warmup_batches,
                     f.steady_from_start ? "; run too short for a warm-up window" : "");
  out << st.heading("Set-up") << "\n";
  auto row = [&out](std::string_view key, const std::string& value) { out << fmt::format("  {:<12}{}\n", key, value); };
  row("data", s.source);
  row("storage", s.storage_type);
  row("loader", fmt::format("{} workers, prefetch {}, batch {}, io depth {}, pin memory {}", c.workers, c.prefetch_factor,
                            c.batch_size, c.io_depth, c.pin_memory ? "on" : "off"));
  row("per sample", fmt::format("{} -> {} in the batch", s.transform, format_bytes(s.sample_bytes)));
  row("device", s.device_detail.empty() ? s.device : s.device_detail);
  if (verbose && !s.device_why.empty()) row("", s.device_why);
  row("step", s.step);
  if (!s.worker_cpus.empty()) row("worker cpus", s.worker_cpus);
  out << "\n" << st.heading("Figures") << "\n";
  std::vector<std::pair<std::string, std::string>> rows;
  auto add = [&rows](std::string key, std::string value) { rows.emplace_back(std::move(key), std::move(value)); };
  add("fetch latency", fmt::format("mean {:.2f} ms, p50 {:.2f} ms, p99 {:.2f} ms ({} reads, {})", ms(f.fetch.mean_ns()),
                                      quantile_ms(f.fetch, 0.5), quantile_ms(f.fetch, 0.99), f.fetch.count,
                                      format_bytes(f.bytes_read)));
  add("decode / CPU work", fmt::format("mean {:.3f} ms, p99 {:.3f} ms per sample", ms(f.transform.mean_ns()),
                                          quantile_ms(f.transform, 0.99)));
  add("step", fmt::format("mean {:.2f} ms", f.step_mean_ms));
  add("ready batches", fmt::format("mean {:.1f} of {} in flight at most", f.mean_ready,
                                      c.workers * c.prefetch_factor));
  if (r.setup.device == "cpu") {
    add("host to device", fmt::format("none: the step reads the host batch ({} cpu)", spell(Setting::device)));
  } else {
    add("host to device", fmt::format("{:.2f} GB/s over {} copies ({})", f.h2d_gbps, f.transfer.copies,
                                         format_bytes(f.transfer.bytes)));
  }
  add("page-locked", fmt::format("{}{}", format_bytes(f.pinned_bytes),
                                    c.pin_memory && !f.page_locked ? " (not locked: see notes)" : ""));
  add("peak RSS", format_bytes(r.peak_rss_bytes));
  for (const auto& tier : r.tiers) {
    add(tier.tier + " cache", fmt::format("hit rate {} ({} hits, {} misses), {} of {}", pct(tier.hit_rate()),
                                             tier.hits, tier.misses, format_bytes(tier.bytes_cached),
                                             format_bytes(tier.capacity_bytes)));
  }
  if (f.bad_samples) add("bad samples", fmt::format("{} skipped", f.bad_samples));
  for (const auto& [key, value] : rows) out << fmt::format("  {:<19}{}\n", key, value);
  if (verbose) {
    out << "\n" << st.heading("Fetch latency") << "\n";
    for (const auto& line : draw_histogram(f.fetch)) out << "  " << line << "\n";
    for (const auto& k : f.bad_sample_keys) out << "  bad: " << k << "\n";
  }
  if (f.stopped_early) out << "\n" << st.warn("Stopped early (interrupted): figures cover the run so far.") << "\n";
  for (const auto& n : r.notes) out << "\n" << st.dim("note: " + n) << "\n";
}

Json to_json(const StorageTable& t) {
  Json levels = Json::array();
  for (const auto& l : t.levels) {
    levels.push_back({{"concurrency", l.concurrency}, {"stat", op_json(l.stat)},   {"open", op_json(l.open)},
                      {"read", op_json(l.read)},      {"samples", l.samples},      {"bytes", l.bytes},
                      {"errors", l.errors},           {"wall_s", l.wall_s},        {"mb_per_s", l.mb_per_s},
                      {"iops", l.samples_per_s}});
  }
  return {{"mode", "storage"},
          {"source", t.source},
          {"storage_type", t.storage_type},
          {"dataset_samples", t.dataset_samples},
          {"dataset_bytes", t.dataset_bytes},
          {"samples_reused", t.samples_reused},
          {"levels", levels}};
}

void render_text(const StorageTable& t, const TextStyle& st, std::ostream& out) {
  out << st.heading("gpufeed bench --storage-only") << "\n";
  out << fmt::format("  {}\n  type {}; {} samples, {}\n\n", t.source, t.storage_type, t.dataset_samples,
                     format_bytes(t.dataset_bytes));
  TextTable table({"conc", "stat p50/p95/p99 ms", "open p50/p95/p99 ms", "read p50/p95/p99 ms", "MB/s", "IOPS", "samples"});
  auto three = [](const OpLatency& o) { return fmt::format("{:.2f} / {:.2f} / {:.2f}", o.p50_ms, o.p95_ms, o.p99_ms); };
  for (const auto& l : t.levels) {
    table.add({std::to_string(l.concurrency), three(l.stat), three(l.open), three(l.read), fmt::format("{:.1f}", l.mb_per_s),
               fmt::format("{:.0f}", l.samples_per_s), std::to_string(l.samples) + (l.errors ? fmt::format(" ({} bad)", l.errors) : "")});
  }
  table.print(out, st);
  out << "\n" << st.dim("  One access = stat, open, then a whole read of one sample; IOPS counts accesses.") << "\n";
  if (t.samples_reused) {
    out << st.dim("  The dataset was smaller than the levels needed: later levels re-read samples (page cache may flatter them).")
        << "\n";
  }
}

std::string progress_line(const Progress& p) {
  return fmt::format("{:6.1f} s  {:6} batches  {:8.0f} samples/s  starvation {:5.1f}%  ready {:3}", p.elapsed_s, p.batches,
                     p.samples_per_s, p.starvation * 100, p.ready_batches);
}

}  // namespace gpufeed::loader
