#include "gpufeed/diagnose/findings.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "gpufeed/diagnose/gpu_figures.hpp"
#include "gpufeed/diagnose/mounts.hpp"
#include "gpufeed/units.hpp"

namespace gpufeed {
namespace {

std::string pct(double fraction) { return fmt::format("{:.0f}%", fraction * 100); }
std::string ms(std::optional<double> v) { return v ? fmt::format("{:.1f} ms", *v) : "n/a"; }
Json opt(std::optional<double> v) { return v ? Json(*v) : Json(nullptr); }

// Without eBPF the figures are sampled from /proc: the same rules, lower confidence.
Confidence base_confidence(const Evidence& e) { return e.ebpf ? Confidence::High : Confidence::Low; }

struct Context {
  const Evidence& e;
  const RuleThresholds& t;
  LoaderFigures f;
  double wait = 0;  // data-wait fraction, 0 when unknown
  bool starved = false;
  // The usable cores are saturated (busy, or tasks stalled waiting for a
  // CPU), whoever uses them: the workers, the loop, or a storage daemon such
  // as s3fs beside them. Then CPU is the binding constraint, and no finding
  // may advise more workers.
  bool cores_saturated = false;
  std::vector<Finding> out;
};

// W x busy / (1 - f): the workers that would feed the loop at its own pace
// (Little's law: a rank delivers W / t samples/s; fed, it needs 1/(1-f) times
// what it gets now), with headroom for the latency tail.
int workers_needed(const Context& c) {
  const double w = std::max(1, c.f.max_workers_per_rank);
  const double busy = c.f.worker_busy_fraction.value_or(1.0);
  const double f = std::min(c.wait, 0.95);
  return std::max(static_cast<int>(w) + 1, static_cast<int>(std::ceil(w * busy / (1.0 - f) * c.t.worker_headroom)));
}

void loop_starved(Context& c) {
  if (!c.f.data_wait_fraction || c.wait < c.t.starved_warning) return;
  Finding x;
  x.id = "loop.starved";
  x.severity = c.wait >= c.t.starved_critical ? Severity::Critical : Severity::Warning;
  const double speedup = 1.0 / (1.0 - std::min(c.wait, 0.99));
  x.title = fmt::format("The training loop waits for data {} of the time", pct(c.wait));
  x.evidence.push_back(fmt::format("data wait: {} of the loop's wall time over {:.1f} s{}", pct(c.wait),
                                   c.f.data_wait_sampled ? c.e.window_s : c.f.loop_active_s,
                                   c.f.data_wait_sampled ? " (sampled from /proc)" : " (from its first wait for a batch)"));
  x.evidence.push_back(fmt::format("if fed, the loop would run up to {:.1f}x faster", speedup));
  if (!c.e.gpu_measured) x.evidence.push_back("GPU activity not measured: data wait is the starvation signal");
  x.figures = {{"data_wait_fraction", c.wait}, {"speedup_if_fed", speedup}};
  x.advice = "feed the loop: see the causes below (workers, storage, prefetch)";
  x.confidence = c.f.data_wait_sampled ? Confidence::Medium : base_confidence(c.e);
  x.weight = c.wait;
  c.out.push_back(std::move(x));
}

void slow_metadata(Context& c) {
  const double worker_wall = std::max(c.f.worker_wall_s, 1e-9);
  // One finding per mount: its latencies are the mount's, and a dataset in
  // class directories (ImageNet's 1 000) would repeat it per directory. The
  // evidence names the directory with the most slow time (groups come most
  // time first) and how many others there were.
  std::map<std::string, std::pair<SlowGroup, int>> by_mount;  // -> (top group, directories)
  std::vector<std::string> order;
  for (const auto& g : slow_groups(c.e)) {
    auto [it, inserted] = by_mount.emplace(g.mount_point, std::make_pair(g, 0));
    if (inserted) order.push_back(g.mount_point);
    ++it->second.second;
    if (!inserted) {
      it->second.first.stat_calls += g.stat_calls;
      it->second.first.open_calls += g.open_calls;
    }
  }
  for (const auto& mount : order) {
    const auto& [g, directories] = by_mount.at(mount);
    const std::uint64_t path_calls = g.stat_calls + g.open_calls;
    if (path_calls < c.t.min_slow_calls || g.mount_point == "?") continue;
    PathLatency stat = path_latency(c.e, true, g.mount_point);
    PathLatency open = path_latency(c.e, false, g.mount_point);
    const double share = (stat.total_s + open.total_s) / worker_wall;
    if (share < c.t.slow_path_time_share && c.f.worker_wall_s > 0) continue;
    Finding x;
    x.id = "storage.slow-metadata";
    const bool cause = c.starved && share >= 0.3;
    x.severity = cause ? Severity::Critical : Severity::Warning;
    x.title = fmt::format("Slow stat/open on {} ({}): stat p50 {}, open p50 {}", g.mount_point, g.fs_type,
                          ms(stat.p50_ms), ms(open.p50_ms));
    x.evidence.push_back(fmt::format("{} stat calls over {:.0f} ms: p50 {}, p99 {}", stat.calls,
                                     c.e.slow_threshold_ms, ms(stat.p50_ms), ms(stat.p99_ms)));
    x.evidence.push_back(fmt::format("{} open calls over {:.0f} ms: p50 {}, p99 {}", open.calls,
                                     c.e.slow_threshold_ms, ms(open.p50_ms), ms(open.p99_ms)));
    x.evidence.push_back(fmt::format("mount {} type {} ({} storage), under {}{}", g.mount_point, g.fs_type,
                                     storage_class_name(storage_class(g.fs_type)), g.prefix,
                                     directories > 1 ? fmt::format(" and {} other director{}", directories - 1,
                                                                   directories == 2 ? "y" : "ies")
                                                     : ""));
    if (c.f.worker_wall_s > 0) {
      x.evidence.push_back(fmt::format("workers spend {} of their time in these calls (local disks: tens of us)",
                                       pct(std::min(share, 1.0))));
    }
    x.figures = {{"mount_point", g.mount_point},
                 {"fs_type", g.fs_type},
                 {"prefix", g.prefix},
                 {"stat_calls", stat.calls},
                 {"stat_p50_ms", opt(stat.p50_ms)},
                 {"stat_p99_ms", opt(stat.p99_ms)},
                 {"open_calls", open.calls},
                 {"open_p50_ms", opt(open.p50_ms)},
                 {"open_p99_ms", opt(open.p99_ms)},
                 {"worker_time_share", std::min(share, 1.0)}};
    x.advice = fmt::format(
        "copy or cache the dataset on local NVMe (a local cache tier in front of {}), or pack it into large shards "
        "(tar/WebDataset) so one open serves many samples{}",
        g.mount_point,
        c.cores_saturated ? "" : "; meanwhile more DataLoader workers hide the latency");
    x.confidence = base_confidence(c.e);
    x.weight = cause ? std::min(share, 1.0) * c.wait : share * 0.1;
    c.out.push_back(std::move(x));
  }
}

void too_few_workers(Context& c) {
  if (!c.starved || !c.f.worker_busy_fraction || *c.f.worker_busy_fraction < c.t.workers_saturated) return;
  if (c.f.max_workers_per_rank == 0) return;
  if (c.cores_saturated) return;  // more workers cannot help: cpu.saturated or workers.cpu-bound says what can
  const int need = workers_needed(c);
  const int usable = c.e.host.usable_cpus;
  const bool cpu_bound = c.f.worker_cpu_share.value_or(0) >= c.t.cpu_bound_share;
  Finding x;
  x.id = "loader.too-few-workers";
  x.severity = c.wait >= c.t.starved_critical ? Severity::Critical : Severity::Warning;
  x.title = fmt::format("Too few DataLoader workers: {} per rank, about {} needed", c.f.max_workers_per_rank, need);
  x.evidence.push_back(fmt::format("workers busy {} of their time (not waiting for work) while the loop waits {}",
                                   pct(*c.f.worker_busy_fraction), pct(c.wait)));
  x.evidence.push_back(fmt::format("Little's law: {} workers x {} busy / (1 - {} wait) x {:.2f} headroom = {}",
                                   c.f.max_workers_per_rank, pct(*c.f.worker_busy_fraction), pct(c.wait),
                                   c.t.worker_headroom, need));
  std::string advice = fmt::format("set num_workers={} per rank", need);
  if (cpu_bound && usable > 0 && need * c.e.ranks > usable) {
    advice += fmt::format(
        "; the workers are CPU-bound and {} ranks x {} exceed the {} usable cores, so also make the per-sample work "
        "cheaper (see workers.cpu-bound)",
        c.e.ranks, need, usable);
  } else if (!cpu_bound) {
    advice += " (they are not CPU-bound, so more workers than cores is fine)";
  }
  x.figures = {{"workers_per_rank", c.f.max_workers_per_rank},
               {"worker_busy_fraction", *c.f.worker_busy_fraction},
               {"data_wait_fraction", c.wait},
               {"recommended_num_workers", need}};
  x.advice = advice;
  x.confidence = c.f.data_wait_sampled ? Confidence::Low : base_confidence(c.e);
  x.weight = c.wait * 0.9;
  c.out.push_back(std::move(x));
}

// Busy workers that spend their busy time on CPU, on saturated cores:
// workers.cpu-bound, which cpu.saturated leaves to it.
bool workers_busy(const Context& c) {
  return c.f.worker_busy_fraction && *c.f.worker_busy_fraction >= 0.5 && c.f.workers_total > 0;
}
bool workers_cpu_bound(const Context& c) {
  return workers_busy(c) && c.f.worker_cpu_share.value_or(0) >= c.t.cpu_bound_share && c.cores_saturated;
}

void workers_bound(Context& c) {
  if (!workers_busy(c)) return;
  const double io = c.f.worker_io_share.value_or(0), cpu = c.f.worker_cpu_share.value_or(0);
  if (workers_cpu_bound(c)) {
    Finding x;
    x.id = "workers.cpu-bound";
    x.severity = c.starved ? Severity::Warning : Severity::Info;
    x.title = fmt::format("Workers are CPU-bound: {} of their busy time on CPU, cores {:.0f}% busy", pct(cpu),
                          c.e.host.cpu_busy_pct);
    x.evidence.push_back(fmt::format("worker CPU {:.1f} s of {:.1f} s busy; {} usable cores at {:.0f}% busy",
                                     c.f.worker_cpu_s, c.f.worker_wall_s - c.f.worker_wait_s, c.e.host.usable_cpus,
                                     c.e.host.cpu_busy_pct));
    x.figures = {{"worker_cpu_share", cpu}, {"cpu_busy_pct", c.e.host.cpu_busy_pct}};
    x.advice =
        "more workers will not help beyond the cores: make each sample cheaper (decode at lower resolution, "
        "pillow-simd or GPU decode such as DALI/nvJPEG, fewer CPU transforms) or give the job more cores";
    x.confidence = base_confidence(c.e);
    x.weight = c.starved ? c.wait * 0.8 : 0.05;
    c.out.push_back(std::move(x));
  } else if (io >= c.t.io_bound_share) {
    Finding x;
    x.id = "workers.io-bound";
    x.severity = c.starved ? Severity::Warning : Severity::Info;
    x.title = fmt::format("Workers are I/O-bound: {} of their busy time blocked in file and path calls", pct(io));
    x.evidence.push_back(fmt::format("workers blocked {:.1f} s in open/stat/read, on CPU {:.1f} s", c.f.worker_io_s,
                                     c.f.worker_cpu_s));
    x.evidence.push_back(fmt::format("worker samples in D state: {}; host iowait {:.0f}% (FUSE and network waits "
                                     "sleep in S state, so iowait stays low)",
                                     pct(c.f.worker_d_state_share), c.e.host.cpu_iowait_pct));
    x.figures = {{"worker_io_share", io}, {"worker_d_state_share", c.f.worker_d_state_share},
                 {"cpu_iowait_pct", c.e.host.cpu_iowait_pct}};
    x.advice = c.cores_saturated
                   ? "the workers wait on storage, but the cores are saturated (see cpu.saturated): more workers "
                     "would only add contention; a local cache tier or larger files remove the waits"
                   : "the workers wait on storage, not on the CPU: more workers overlap the waits (they sleep, so "
                     "more than the cores is fine); a local cache tier or larger files remove them";
    x.confidence = base_confidence(c.e);
    x.weight = c.starved ? c.wait * 0.5 : 0.05;
    c.out.push_back(std::move(x));
  }
}

// The loop starves while the usable cores are saturated and the workers are
// not the CPU-bound ones (workers.cpu-bound covers those): the CPU goes to
// the loop itself or outside the job (a FUSE or storage daemon, other
// jobs). The binding constraint is CPU, so this is the top cause, and the fix
// takes work off the cores instead of adding workers.
void cores_saturated(Context& c) {
  if (!c.starved || !c.cores_saturated) return;
  if (workers_cpu_bound(c)) return;  // workers.cpu-bound says it, with advice for CPU-bound workers
  const HostActivity& h = c.e.host;
  double worker_cpu = 0, loop_cpu = 0;
  for (const auto& p : c.e.processes) (p.worker ? worker_cpu : loop_cpu) += p.cpu_s;
  const double busy_cpu = h.cpu_busy_pct / 100.0 * std::max(0, h.usable_cpus) * c.e.window_s;
  const double outside = std::max(0.0, busy_cpu - worker_cpu - loop_cpu);
  const double outside_share = busy_cpu > 0 ? outside / busy_cpu : 0;
  Finding x;
  x.id = "cpu.saturated";
  x.severity = c.wait >= c.t.starved_critical ? Severity::Critical : Severity::Warning;
  const std::string pressure =
      h.psi_cpu_some_pct ? fmt::format(", tasks waiting for a CPU {:.0f}% of the time (PSI)", *h.psi_cpu_some_pct) : "";
  x.title = fmt::format("The cores are saturated ({:.0f}% busy{}) while the loop waits: more workers cannot feed it",
                        h.cpu_busy_pct, pressure);
  if (busy_cpu > 0) {
    x.evidence.push_back(fmt::format("{:.1f} CPU-s busy on {} usable cores over {:.1f} s: the job's workers {:.1f} s, "
                                     "its training processes {:.1f} s, outside the job {:.1f} s ({})",
                                     busy_cpu, h.usable_cpus, c.e.window_s, worker_cpu, loop_cpu, outside,
                                     pct(outside_share)));
  }
  x.evidence.push_back(fmt::format("the loop waits for data {} of the time", pct(c.wait)));
  x.figures = {{"cpu_busy_pct", h.cpu_busy_pct},
               {"psi_cpu_some_pct", opt(h.psi_cpu_some_pct)},
               {"usable_cpus", h.usable_cpus},
               {"worker_cpu_s", worker_cpu},
               {"loop_cpu_s", loop_cpu},
               {"outside_job_cpu_s", outside}};
  if (outside_share >= 0.3) {
    x.advice = fmt::format(
        "{} of the busy CPU is outside the job: a FUSE or storage daemon (s3fs, goofys), or another job, on the "
        "same cores. Take that work off them: a local cache tier or large shards remove the daemon's per-file "
        "work; keep num_workers at or below {} per rank (more workers only add contention), or give the job and "
        "the daemon more cores",
        pct(outside_share), std::max(1, c.f.max_workers_per_rank));
  } else {
    x.advice = fmt::format(
        "the job itself fills the cores: use fewer or cheaper workers (num_workers at or below {} per rank, "
        "cheaper transforms), a local cache tier or shards for the storage calls, or more cores; more workers "
        "only add contention",
        std::max(1, c.f.max_workers_per_rank));
  }
  x.confidence = base_confidence(c.e);
  x.weight = c.wait;  // the binding constraint: above every cause it makes worse
  c.out.push_back(std::move(x));
}

void shallow_prefetch(Context& c) {
  if (!c.f.data_wait_fraction || c.wait < 0.05) return;
  if (c.f.worker_busy_fraction && *c.f.worker_busy_fraction >= c.t.workers_saturated * 0.95) return;
  std::vector<double> spans;
  for (const auto& w : c.e.waits) spans.push_back(w.dur_ms);
  if (spans.size() < c.t.min_wait_spans) return;
  std::sort(spans.rbegin(), spans.rend());
  double total = 0, top = 0;
  const size_t top_n = std::max<size_t>(1, spans.size() / 10);
  for (size_t i = 0; i < spans.size(); ++i) {
    total += spans[i];
    if (i < top_n) top += spans[i];
  }
  const double top_share = total > 0 ? top / total : 0;
  if (top_share < c.t.burst_top_share) return;
  Finding x;
  x.id = "loader.shallow-prefetch";
  x.severity = c.starved ? Severity::Warning : Severity::Info;
  x.title = fmt::format("Data waits come in bursts: the longest 10% of waits hold {} of the wait time", pct(top_share));
  x.evidence.push_back(fmt::format("{} waits, longest {:.1f} ms; workers busy only {} on average", spans.size(),
                                   spans.front(), pct(c.f.worker_busy_fraction.value_or(0))));
  x.evidence.push_back("the mean supply suffices, but latency spikes drain the prefetch queue");
  x.figures = {{"wait_spans", spans.size()}, {"top_decile_share", top_share}, {"longest_wait_ms", spans.front()}};
  x.advice = "raise prefetch_factor (default 2) to 4-8 and set persistent_workers=True so batches are ready before "
             "a spike; this buffers the tail without more workers";
  x.confidence = base_confidence(c.e);
  x.weight = c.wait * 0.6;
  c.out.push_back(std::move(x));
}

void small_files_remote(Context& c) {
  if (c.f.worker_opens == 0) return;
  const double per_file = static_cast<double>(c.f.worker_read_bytes) / static_cast<double>(c.f.worker_opens);
  if (per_file >= c.t.small_file_bytes) return;
  for (const auto& g : slow_groups(c.e)) {
    if (!is_remote_like(storage_class(g.fs_type)) || g.open_calls + g.stat_calls < c.t.min_slow_calls) continue;
    Finding x;
    x.id = "storage.small-files-remote";
    x.severity = c.starved ? Severity::Warning : Severity::Info;
    x.title = fmt::format("Many small files on {} storage ({}): {} read per opened file",
                          storage_class_name(storage_class(g.fs_type)), g.mount_point,
                          format_bytes(static_cast<std::uint64_t>(per_file)));
    x.evidence.push_back(fmt::format("workers opened {} files and read {} ({} per file, {} per read call)",
                                     c.f.worker_opens, format_bytes(c.f.worker_read_bytes),
                                     format_bytes(static_cast<std::uint64_t>(per_file)),
                                     format_bytes(c.f.worker_file_reads ? c.f.worker_read_bytes / c.f.worker_file_reads : 0)));
    x.evidence.push_back(fmt::format("per-request latency dominates: open p50 {}, stat p50 {}", ms(g.open_p50_ms),
                                     ms(g.stat_p50_ms)));
    x.figures = {{"mount_point", g.mount_point}, {"fs_type", g.fs_type}, {"bytes_per_file", per_file},
                 {"files_opened", c.f.worker_opens}};
    x.advice = "pack the samples into shards of 100 MB or more (tar/WebDataset, or a record format) read "
               "sequentially, or put a local SSD cache tier in front of the mount";
    x.confidence = base_confidence(c.e);
    x.weight = c.starved ? c.wait * 0.7 : 0.02;
    c.out.push_back(std::move(x));
    break;  // one mount is enough to make the point; slow-metadata lists the rest
  }
}

void oversubscribed(Context& c) {
  const int usable = c.e.host.usable_cpus;
  const int live = std::max(c.f.live_workers, c.f.max_workers_per_rank * c.e.ranks);
  if (usable <= 0 || live <= usable) return;
  // Workers that mostly sleep on storage can outnumber the cores harmlessly.
  // Unless the cores are saturated anyway: then they take CPU from the
  // storage daemon and the loop.
  const bool cpu_heavy = c.f.worker_cpu_share.value_or(1.0) >= 0.5;
  const bool costly = cpu_heavy || c.cores_saturated;
  Finding x;
  x.id = "cpu.oversubscribed";
  x.severity = costly ? Severity::Warning : Severity::Info;
  x.title = fmt::format("{} DataLoader workers across {} rank(s) exceed the {} usable cores", live, c.e.ranks, usable);
  x.evidence.push_back(fmt::format("{} worker processes plus {} training process(es); {} usable CPUs (affinity)", live,
                                   c.e.ranks, usable));
  if (c.f.worker_cpu_share) {
    x.evidence.push_back(fmt::format("workers spend {} of their busy time on CPU", pct(*c.f.worker_cpu_share)));
  }
  x.figures = {{"workers", live}, {"ranks", c.e.ranks}, {"usable_cpus", usable}};
  const int per_rank = std::max(1, (usable - c.e.ranks) / std::max(1, c.e.ranks));
  if (cpu_heavy) {
    x.advice = fmt::format("CPU-bound workers beyond the cores only add switching: use num_workers<={} per "
                           "rank (see 'gpufeed probe' for the per-GPU core budget)",
                           per_rank);
  } else if (c.cores_saturated) {
    x.advice = fmt::format("the cores are saturated, so workers beyond them take CPU from the loop and the storage "
                           "daemon: use num_workers<={} per rank, and a local cache tier or shards to remove the "
                           "storage waits the extra workers were hiding",
                           per_rank);
  } else {
    x.advice = "the workers mostly wait on storage, so this is tolerable; pin them to the GPU's NUMA cores "
               "(see 'gpufeed probe')";
  }
  x.confidence = Confidence::High;
  x.weight = costly ? 0.05 : 0.01;
  c.out.push_back(std::move(x));
}

std::string gpu_list(const std::vector<JobGpu>& gpus) {
  std::string out;
  for (const auto& g : gpus) {
    out += fmt::format("{}{} busy {}", out.empty() ? "" : ", ", g.device.bus_id.empty() ? std::to_string(g.device.index) : g.device.bus_id,
                       g.activity.busy_fraction ? pct(*g.activity.busy_fraction) : "n/a");
  }
  return out;
}

void gpu_findings(Context& c) {
  const auto gpus = job_gpus(c.e);
  const auto busy = job_gpu_busy(gpus);
  if (!busy) return;
  const std::string backend = c.e.gpu ? c.e.gpu->backend : "";
  const bool wait_known = c.f.data_wait_fraction.has_value();
  if (*busy < c.t.gpu_starved_busy && (c.starved || !wait_known)) {
    Finding x;
    x.id = "gpu.starved";
    x.severity = *busy < 0.3 && c.starved ? Severity::Critical : Severity::Warning;
    x.title = wait_known ? fmt::format("The GPUs are busy only {} while the loop waits {} for data", pct(*busy), pct(c.wait))
                         : fmt::format("The GPUs are busy only {}", pct(*busy));
    x.evidence.push_back(fmt::format("{} ({} samples, {})", gpu_list(gpus), backend, c.e.gpu->source));
    x.evidence.push_back("busy % is coarse (" + busy_meaning(backend) + ")");
    x.figures = {{"gpu_busy_fraction", *busy}, {"data_wait_fraction", wait_known ? Json(c.wait) : Json(nullptr)}};
    x.advice = "the GPUs starve for data: fix the loader causes listed here; the GPUs are not the limit";
    x.confidence = wait_known ? base_confidence(c.e) : Confidence::Medium;
    x.weight = c.wait * 0.4;
    c.out.push_back(std::move(x));
  }
  if (*busy >= c.t.gpu_bound_busy && (!wait_known || c.wait < c.t.starved_warning)) {
    Finding x;
    x.id = "gpu.bound";
    x.severity = Severity::Info;
    x.title = fmt::format("GPU-bound: the GPUs are busy {}; the loader is not the problem", pct(*busy));
    x.evidence.push_back(fmt::format("{}; the loop waits {} for data", gpu_list(gpus),
                                     wait_known ? pct(c.wait) : std::string("an unknown share of time")));
    x.figures = {{"gpu_busy_fraction", *busy}, {"data_wait_fraction", wait_known ? Json(c.wait) : Json(nullptr)}};
    x.advice = "speed up the model step instead (mixed precision, larger batches, fused kernels or torch.compile); "
               "more DataLoader workers will not help";
    x.confidence = base_confidence(c.e);
    x.weight = 0.0;
    c.out.push_back(std::move(x));
  }
  for (const auto& g : gpus) {
    const auto& a = g.activity;
    if (!a.period_s || !a.mean_idle_gap_s || a.idle_gaps_s.size() < 3 || !a.busy_fraction ||
        *a.busy_fraction >= c.t.gpu_bound_busy || a.period_strength.value_or(0) < c.t.gpu_period_strength) {
      continue;
    }
    Finding x;
    x.id = "gpu.periodic-starvation";
    x.severity = c.starved ? Severity::Warning : Severity::Info;
    const std::string where = g.device.bus_id.empty() ? std::to_string(g.device.index) : g.device.bus_id;
    x.title = fmt::format("GPU {} idles for ~{:.0f} ms every ~{:.0f} ms", where, *a.mean_idle_gap_s * 1e3,
                          *a.period_s * 1e3);
    x.evidence.push_back(fmt::format("{} idle gaps, mean {:.0f} ms; the busy signal repeats every {:.0f} ms "
                                     "(autocorrelation {:.2f}{})",
                                     a.idle_gaps_s.size(), *a.mean_idle_gap_s * 1e3, *a.period_s * 1e3,
                                     *a.period_strength, g.fine_grained ? ", from the vendor's fine samples" : ""));
    const int workers = std::max(1, c.f.max_workers_per_rank);
    x.evidence.push_back(fmt::format("with {} workers per rank, batches that arrive in bursts of {} leave the GPU idle "
                                     "in between",
                                     workers, workers));
    x.figures = {{"gpu", where}, {"period_ms", *a.period_s * 1e3}, {"mean_idle_gap_ms", *a.mean_idle_gap_s * 1e3},
                 {"period_strength", *a.period_strength}};
    x.advice = std::string("deepen the prefetch so the queue covers the gap: prefetch_factor 4-8 with "
                           "persistent_workers=True (workers re-forked each epoch start in step and finish in step)") +
               (c.cores_saturated ? "" : "; more workers shorten the gap");
    x.confidence = base_confidence(c.e);
    x.weight = c.starved ? c.wait * 0.55 : 0.02;
    c.out.push_back(std::move(x));
    break;
  }
}

// The rules, in the order they run: each with the finding ids it may emit.
// A new finding is one function above and one line here; the schema's enum
// and docs/findings.md are checked against these ids by tests
// (DiagnoseRules.EveryFindingIdIsInTheSchemaAndTheDocs).
struct Rule {
  void (*evaluate)(Context&);
  std::vector<std::string_view> ids;
};
const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = {
      {loop_starved, {"loop.starved"}},
      // Before the causes it outweighs: among equal weights the first is the top cause.
      {cores_saturated, {"cpu.saturated"}},
      {slow_metadata, {"storage.slow-metadata"}},
      {too_few_workers, {"loader.too-few-workers"}},
      {workers_bound, {"workers.cpu-bound", "workers.io-bound"}},
      {shallow_prefetch, {"loader.shallow-prefetch"}},
      {small_files_remote, {"storage.small-files-remote"}},
      {oversubscribed, {"cpu.oversubscribed"}},
      {gpu_findings, {"gpu.starved", "gpu.bound", "gpu.periodic-starvation"}},
  };
  return table;
}

}  // namespace

std::vector<std::string> finding_ids() {
  std::vector<std::string> ids;
  for (const auto& rule : rules()) ids.insert(ids.end(), rule.ids.begin(), rule.ids.end());
  return ids;
}

std::string severity_name(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Critical: return "critical";
  }
  return "info";
}

std::optional<Severity> parse_severity(const std::string& text) {
  if (text == "info") return Severity::Info;
  if (text == "warning") return Severity::Warning;
  if (text == "critical") return Severity::Critical;
  return std::nullopt;
}

std::string confidence_name(Confidence c) {
  switch (c) {
    case Confidence::Low: return "low";
    case Confidence::Medium: return "medium";
    case Confidence::High: return "high";
  }
  return "low";
}

std::vector<Finding> evaluate_rules(const Evidence& e, const RuleThresholds& t) {
  Context c{e, t, loader_figures(e), 0.0, false, false, {}};
  c.wait = c.f.data_wait_fraction.value_or(0);
  c.starved = c.f.data_wait_fraction && c.wait >= t.starved_warning;
  c.cores_saturated = e.host.usable_cpus > 0 &&
                      (e.host.cpu_busy_pct >= t.cpu_saturated_pct ||
                       e.host.psi_cpu_some_pct.value_or(0) >= t.cpu_pressure_saturated_pct);
  for (const auto& rule : rules()) rule.evaluate(c);
  // Most severe first; among equals, the one that explains most loop time.
  std::stable_sort(c.out.begin(), c.out.end(), [](const Finding& a, const Finding& b) {
    return a.severity != b.severity ? a.severity > b.severity : a.weight > b.weight;
  });
  return c.out;
}

}  // namespace gpufeed
