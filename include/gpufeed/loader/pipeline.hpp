#pragma once
// The built-in prefetching loader, with PyTorch DataLoader semantics where
// they matter to throughput (docs/loader.md):
//  - W workers; worker w builds whole batches w, w+W, w+2W, ... of each
//    epoch, loading a batch's samples one after another (or io_depth at a
//    time);
//  - batches are delivered to the step in order;
//  - at most prefetch_factor x W batches are in flight (issued and not yet
//    handed to the step); a new batch is issued when one is consumed;
//  - workers persist across epochs; the sampler walks the dataset in order or
//    in a seeded shuffle per epoch; drop_last keeps batches full;
//  - an epoch's iterator issues only its own batches: the next epoch's first
//    prefetch_factor x W are issued when the step of the epoch's last batch
//    is done (PyTorch's _reset), so the pipeline drains at each epoch's end.
// Workers write samples straight into page-locked batch buffers; a transfer
// thread copies ready batches to device slots on the backend's transfer
// stream, so the copy of batch k+1 overlaps step k; the step waits only for
// its own batch.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/diagnose/histogram.hpp"
#include "gpufeed/loader/device_backend.hpp"
#include "gpufeed/loader/sample_source.hpp"
#include "gpufeed/loader/step.hpp"
#include "gpufeed/loader/transform.hpp"

namespace gpufeed::loader {

struct LoaderConfig {
  int workers = 4;
  int prefetch_factor = 2;
  int batch_size = 32;
  int io_depth = 1;        // fetches a worker keeps in flight within a batch
  bool pin_memory = true;  // batch buffers from the backend's page-locked allocator
  bool drop_last = true;
  bool shuffle = false;
  std::uint64_t seed = 0;
  bool skip_bad = false;   // count bad samples and go on, instead of stopping
  int device_slots = 2;    // double buffering on the device
  std::uint64_t mem_budget_bytes = 0;  // page-locked bytes allowed; 0: no limit
  // What a worker calls per sample before its read, as the job does
  // (storage_table.hpp): stat(2)s and extra open(2)s, timed with the fetch.
  int stats_per_sample = 0;
  int extra_opens_per_sample = 0;
};

// Page-locked bytes a config needs: the in-flight batch buffers plus, on the
// host backend, the device slots that live in host memory.
struct MemoryPlan {
  std::uint64_t batch_bytes = 0;
  std::uint64_t buffers = 0;       // prefetch_factor x workers
  std::uint64_t pinned_bytes = 0;  // buffers x batch_bytes
  std::string formula;             // "8 workers x 4 prefetch x 256 samples x 147 KiB = 1.1 GiB"
};
MemoryPlan plan_memory(const LoaderConfig& config, std::size_t sample_bytes);
// Throws a usage error with the formula when the plan exceeds the budget.
void check_memory_budget(const LoaderConfig& config, const MemoryPlan& plan);

struct RunLimits {
  std::optional<std::chrono::nanoseconds> duration;  // wall time of the run
  std::optional<std::uint64_t> batches;              // steps to run
  // Steps excluded from the figures at the start: the initial prefetch being
  // drained is not steady state. nullopt: prefetch_factor x workers.
  std::optional<std::uint64_t> warmup_batches;
};

struct Progress {
  double elapsed_s = 0;
  std::uint64_t batches = 0;
  double samples_per_s = 0;    // over the last second or so
  double starvation = 0;       // so far, steady window
  int ready_batches = 0;
};

// Hooks into the hardware and the user: the core stays free of both.
struct RunHooks {
  // Called on each worker thread before it starts (CPU binding).
  std::function<void(int worker)> on_worker_start;
  // Called about twice a second from the step loop.
  std::function<void(const Progress&)> on_progress;
  // Set (e.g. by a SIGINT handler) to end the run early; figures are kept.
  const std::atomic<bool>* stop = nullptr;
};

struct QueuePoint {
  double t_s = 0;
  int ready = 0;      // batches completed by workers, waiting for the step
  int in_flight = 0;  // issued, not yet consumed
};

struct LoaderFigures {
  // Steady-state window.
  double window_s = 0;
  std::uint64_t batches = 0;
  std::uint64_t samples = 0;
  // Both with the window's epoch refills made fair (epoch_fair_window): on
  // a dataset of few batches, samples / window_s can differ.
  double samples_per_s = 0;
  double starvation = 0;       // time the step waited for its batch / window
  double batch_wait_p50_ms = 0;
  double batch_wait_p99_ms = 0;
  double step_mean_ms = 0;
  // Whole run.
  double wall_s = 0;
  std::uint64_t total_batches = 0;
  std::uint64_t warmup_batches = 0;
  std::uint64_t epochs_started = 0;
  std::uint64_t bad_samples = 0;
  std::vector<std::string> bad_sample_keys;  // the first few
  LatencyHistogram fetch;      // per-sample read latency
  LatencyHistogram transform;  // per-sample decode / CPU work
  std::uint64_t transform_cpu_ns = 0;  // the workers' CPU time in `transform`'s samples (no wait for a core); 0 for an in-place copy
  std::uint64_t bytes_read = 0;
  std::vector<QueuePoint> queue;  // sampled at every step, thinned to <= 200 points
  double mean_ready = 0;
  int max_in_flight = 0;       // never above prefetch_factor x workers
  TransferStats transfer;
  double h2d_gbps = 0;         // bytes / busy time of the transfer engine
  std::uint64_t pinned_bytes = 0;
  bool page_locked = false;
  bool stopped_early = false;  // by RunHooks::stop
  bool steady_from_start = false;  // the run was too short for a warm-up window
};

struct LoaderRun {
  SampleSource& source;
  std::vector<SampleInfo> samples;  // the dataset, as listed
  SampleTransform& transform;
  DeviceBackend& device;
  StepRunner& step;
  LoaderConfig config;
  RunLimits limits;
  RunHooks hooks;
};

// Runs the pipeline until a limit (or the stop flag) and returns the figures.
// Throws the first fatal error a worker met (after stopping every thread), or
// a SampleError when a sample is bad and skip_bad is off.
LoaderFigures run_loader(LoaderRun& run);

}  // namespace gpufeed::loader
