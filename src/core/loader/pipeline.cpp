// The built-in loader: workers, in-order delivery, the in-flight bound, the
// transfer thread and the step loop (pipeline.hpp, docs/loader.md).
#include "gpufeed/loader/pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "gpufeed/loader/batch_order.hpp"
#include "gpufeed/setting.hpp"
#include "gpufeed/stats.hpp"
#include "gpufeed/thread_cpu.hpp"
#include "gpufeed/units.hpp"

namespace gpufeed::loader {
namespace {

// Pageable batch buffers start on a page, as page-locked ones do: the
// kernel's copy into an unaligned buffer (malloc's 16-byte offset) measured
// ~7% slower per 50 KiB sample here (bench/loader_overhead.py).
struct FreeDeleter {
  void operator()(std::byte* p) const noexcept { std::free(p); }
};
using PageableBuffer = std::unique_ptr<std::byte[], FreeDeleter>;

PageableBuffer allocate_pageable(std::size_t bytes) {
  constexpr std::size_t kPage = 4096;
  const std::size_t rounded = std::max<std::size_t>(kPage, (bytes + kPage - 1) / kPage * kPage);
  auto* p = static_cast<std::byte*>(std::aligned_alloc(kPage, rounded));
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);  // touched now, not on the first read into it
  return PageableBuffer(p);
}

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// One batch handed from a worker to the transfer thread.
struct ReadyBatch {
  std::size_t buffer = 0;
  int good_samples = 0;
};

// One batch handed from the transfer thread to the step.
struct CopiedBatch {
  std::uint64_t index = 0;
  std::size_t buffer = 0;
  int slot = 0;
  int good_samples = 0;
  std::uint64_t ticket = 0;
};

struct StepRecord {
  Clock::time_point asked;     // the step asked for its batch
  Clock::time_point got;       // the batch was on the device
  Clock::time_point finished;  // the step returned
  int good_samples = 0;
};

// Per-thread measurements, merged at the end.
struct ThreadFigures {
  LatencyHistogram fetch;
  LatencyHistogram transform;
  std::uint64_t transform_cpu_ns = 0;
  std::uint64_t bytes_read = 0;
};

class Pipeline {
 public:
  explicit Pipeline(LoaderRun& run)
      : run_(run), cfg_(run.config),
        order_(run.samples.size(), static_cast<std::size_t>(cfg_.batch_size), cfg_.drop_last, cfg_.shuffle, cfg_.seed),
        sample_bytes_(run.transform.output_bytes()),
        batch_bytes_(sample_bytes_ * static_cast<std::size_t>(cfg_.batch_size)),
        in_place_(run.transform.in_place()),
        transfers_(run.device.transfers()) {}

  ~Pipeline() { shut_down(); }

  LoaderFigures run() {
    // Start-up honours the stop flag too: thousands of buffers or threads
    // take long enough for a Ctrl-C to land in them.
    allocate();
    if (!stop_requested()) start_threads();
    if (stop_requested()) {
      stopped_early_ = true;
      shut_down();
      if (failure_) std::rethrow_exception(failure_);
      return figures();
    }
    for (std::size_t i = 0; i < in_flight_limit(); ++i) issue_next();
    run_steps();
    shut_down();
    if (failure_) std::rethrow_exception(failure_);
    return figures();
  }

 private:
  // --- set-up and tear-down -------------------------------------------------
  std::size_t in_flight_limit() const {
    return static_cast<std::size_t>(cfg_.workers) * static_cast<std::size_t>(cfg_.prefetch_factor);
  }

  // One buffer per batch in flight; without a transfer (cpu backend) the step
  // reads its batch in place, so one more buffer is held by the step while
  // the next batch is issued, as PyTorch issues an index when it yields one.
  void allocate() {
    const std::size_t count = in_flight_limit() + (transfers_ ? 0 : 1);
    for (std::size_t i = 0; i < count && !stop_requested(); ++i) {
      if (cfg_.pin_memory && transfers_) {
        buffers_.push_back(run_.device.allocate_pinned(batch_bytes_));
      } else {
        pageable_.push_back(allocate_pageable(batch_bytes_));
        buffers_.push_back(PinnedBuffer{pageable_.back().get(), batch_bytes_, false});
      }
      free_buffers_.push_back(i);
    }
    run_.device.reserve_device_slots(cfg_.device_slots, batch_bytes_);
    slot_free_.assign(static_cast<std::size_t>(cfg_.device_slots), true);
    pinned_bytes_ = run_.device.pinned_bytes();
    page_locked_ = std::all_of(buffers_.begin(), buffers_.end(), [](const PinnedBuffer& b) { return b.page_locked; });
  }

  void start_threads() {
    start_ = Clock::now();
    queues_.resize(static_cast<std::size_t>(cfg_.workers));
    worker_cv_ = std::vector<std::condition_variable>(static_cast<std::size_t>(cfg_.workers));
    thread_figures_.resize(static_cast<std::size_t>(cfg_.workers) * static_cast<std::size_t>(cfg_.io_depth));
    for (int w = 0; w < cfg_.workers && !stop_requested(); ++w) threads_.emplace_back([this, w] { worker_main(w); });
    // Without a transfer (cpu backend) the step loop takes ready batches
    // itself: a thread hand-off less per batch.
    if (transfers_) threads_.emplace_back([this] { transfer_main(); });
  }

  void shut_down() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    wake_all();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
    threads_.clear();
    // Copies the transfer thread queued that no step waited for may still
    // be reading their host buffers (an asynchronous copy outlives the
    // thread that queued it): let them finish before the buffers go.
    for (const auto& b : copied_) {
      try {
        run_.device.wait(b.ticket);
      } catch (...) {
        if (!failure_) failure_ = std::current_exception();
      }
    }
    copied_.clear();
    if (cfg_.pin_memory && transfers_) {
      for (const auto& b : buffers_) run_.device.free_pinned(b);
    }
    buffers_.clear();
    pageable_.clear();
  }

  void fail(std::exception_ptr e) {
    {
      std::lock_guard lock(mu_);
      if (!failure_) failure_ = std::move(e);
      stopping_ = true;
    }
    wake_all();
  }

  // --- issuing batches: the in-flight bound -----------------------------------
  // Called with a free buffer available: gives batch `next_issue_` to the
  // next worker, like PyTorch's _try_put_index: round robin from worker 0 in
  // each epoch, and only batches of the epoch the loop is in (the sampler of
  // the epoch's iterator runs out at its end).
  void issue_next() {
    std::lock_guard lock(mu_);
    if (free_buffers_.empty() || next_issue_ >= issue_limit_) return;
    const std::size_t buffer = free_buffers_.front();
    free_buffers_.pop_front();
    const std::uint64_t index = next_issue_++;
    const std::uint64_t per_epoch = order_.batches_per_epoch();
    const auto worker = static_cast<std::size_t>((per_epoch ? index % per_epoch : index) %
                                                 static_cast<std::uint64_t>(cfg_.workers));
    queues_[worker].push_back({index, buffer});
    ++in_flight_;
    max_in_flight_ = std::max(max_in_flight_, in_flight_);
    worker_cv_[worker].notify_one();
  }

  // The step of the epoch's last batch is done: as PyTorch's next iterator
  // does (_reset), issue the new epoch's first prefetch x workers batches at
  // once. Until then the pipeline drained: a bubble of about one batch's
  // build time per epoch, which a job on a small dataset feels (the
  // incident's 400 files: ~12% at 8 workers).
  void start_next_epoch_if_done(std::uint64_t finished) {
    const std::uint64_t per_epoch = order_.batches_per_epoch();
    if (per_epoch == 0 || (finished + 1) % per_epoch != 0) return;
    {
      std::lock_guard lock(mu_);
      issue_limit_ = finished + 1 + per_epoch;
    }
    for (std::size_t i = 0; i < in_flight_limit(); ++i) issue_next();
  }

  // Each waiter has its own condition variable, so a hand-off wakes only the
  // thread it concerns: on two cores, waking every thread for each batch
  // cost ~5% of a worker's time in futex wake-ups (perf).
  void wake_all() {
    for (auto& cv : worker_cv_) cv.notify_all();
    ready_cv_.notify_all();
    copied_cv_.notify_all();
  }

  // --- workers ----------------------------------------------------------------
  struct Task {
    std::uint64_t index;
    std::size_t buffer;
  };

  void worker_main(int w) {
    try {
      if (run_.hooks.on_worker_start) run_.hooks.on_worker_start(w);
      std::vector<std::thread> crew;
      // io_depth > 1: helpers of this worker share the samples of its batch.
      CrewState crew_state;
      for (int h = 1; h < cfg_.io_depth; ++h) crew.emplace_back([this, w, h, &crew_state] { crew_main(w, h, crew_state); });
      for (;;) {
        Task task;
        {
          std::unique_lock lock(mu_);
          auto& q = queues_[static_cast<std::size_t>(w)];
          worker_cv_[static_cast<std::size_t>(w)].wait(lock, [&] { return stopping_ || !q.empty(); });
          if (stopping_) break;
          task = q.front();
          q.pop_front();
        }
        const int good = build_batch(w, task, crew_state);
        {
          std::lock_guard lock(mu_);
          ready_.emplace(task.index, ReadyBatch{task.buffer, good});
        }
        ready_cv_.notify_one();
      }
      {
        std::lock_guard lock(crew_state.mu);
        crew_state.quit = true;
      }
      crew_state.cv.notify_all();
      for (auto& t : crew) t.join();
    } catch (...) {
      fail(std::current_exception());
    }
  }

  struct CrewState {
    std::mutex mu;
    std::condition_variable cv;
    std::uint64_t generation = 0;
    bool quit = false;
    const Task* task = nullptr;
    const std::vector<std::size_t>* samples = nullptr;
    std::atomic<std::size_t> next{0};
    int active = 0;
    int good = 0;
  };

  int build_batch(int w, const Task& task, CrewState& crew) {
    const std::vector<std::size_t> samples = order_.batch(task.index);
    if (cfg_.io_depth <= 1) {
      int good = 0;
      for (std::size_t j = 0; j < samples.size(); ++j) {
        if (stopping()) break;
        good += load_sample(figures_of(w, 0), task, samples[j], j);
      }
      zero_tail(task, samples.size());
      return good;
    }
    {
      std::lock_guard lock(crew.mu);
      crew.task = &task;
      crew.samples = &samples;
      crew.next = 0;
      crew.good = 0;
      crew.active = cfg_.io_depth;
      ++crew.generation;
    }
    crew.cv.notify_all();
    const int mine = drain_crew(w, 0, crew);
    std::unique_lock lock(crew.mu);
    crew.good += mine;
    --crew.active;
    crew.cv.wait(lock, [&] { return crew.active == 0; });
    zero_tail(task, samples.size());
    return crew.good;
  }

  void crew_main(int w, int h, CrewState& crew) {
    try {
      std::uint64_t seen = 0;
      for (;;) {
        {
          std::unique_lock lock(crew.mu);
          crew.cv.wait(lock, [&] { return crew.quit || crew.generation != seen; });
          if (crew.quit) return;
          seen = crew.generation;
        }
        const int mine = drain_crew(w, h, crew);
        {
          std::lock_guard lock(crew.mu);
          crew.good += mine;
          --crew.active;
        }
        crew.cv.notify_all();
      }
    } catch (...) {
      fail(std::current_exception());
    }
  }

  int drain_crew(int w, int h, CrewState& crew) {
    int good = 0;
    try {
      for (;;) {
        const std::size_t j = crew.next.fetch_add(1);
        if (j >= crew.samples->size() || stopping()) break;
        good += load_sample(figures_of(w, h), *crew.task, (*crew.samples)[j], j);
      }
    } catch (...) {
      fail(std::current_exception());
    }
    return good;
  }

  ThreadFigures& figures_of(int w, int h) {
    return thread_figures_[static_cast<std::size_t>(w) * static_cast<std::size_t>(cfg_.io_depth) + static_cast<std::size_t>(h)];
  }

  // Reads and transforms one sample into its place in the batch; 1 when good.
  int load_sample(ThreadFigures& f, const Task& task, std::size_t sample, std::size_t position) {
    thread_local std::vector<std::byte> bytes;
    const SampleInfo& info = run_.samples[sample];
    std::span<std::byte> out(buffers_[task.buffer].data + position * sample_bytes_, sample_bytes_);
    try {
      const auto t0 = Clock::now();
      for (int i = 0; i < cfg_.stats_per_sample; ++i) run_.source.stat(info);
      for (int i = 0; i < cfg_.extra_opens_per_sample; ++i) run_.source.open(info);
      std::size_t got = 0;
      if (in_place_) {  // no decode: the bytes go straight into the batch
        got = run_.source.read_into(info, out);
      } else {
        run_.source.read(info, bytes);
        got = bytes.size();
      }
      const auto t1 = Clock::now();
      if (in_place_) {  // a copy into the slot: not worth two system calls a sample
        run_.transform.finish_in_place(info.key, out, got);
      } else {
        const std::uint64_t cpu0 = thread_cpu_ns();
        run_.transform.apply(info.key, bytes, out);
        f.transform_cpu_ns += thread_cpu_ns() - cpu0;
      }
      const auto t2 = Clock::now();
      f.fetch.add(static_cast<std::uint64_t>(std::chrono::nanoseconds(t1 - t0).count()));
      f.transform.add(static_cast<std::uint64_t>(std::chrono::nanoseconds(t2 - t1).count()));
      f.bytes_read += got;
      return 1;
    } catch (const SampleError& e) {
      if (!cfg_.skip_bad) {
        if (!e.hint().empty()) throw;
        throw SampleError(e.key(), e.what(),
                          fmt::format("fix or remove it, or pass {} to count and skip bad samples",
                                      spell(Setting::skip_bad)));
      }
      std::memset(out.data(), 0, out.size());
      std::lock_guard lock(bad_mu_);
      ++bad_samples_;
      if (bad_keys_.size() < 10) bad_keys_.push_back(fmt::format("{}: {}", info.key, e.what()));
      return 0;
    }
  }

  // A short last batch (drop_last off) leaves the rest of the buffer zeroed.
  void zero_tail(const Task& task, std::size_t samples) {
    const std::size_t used = samples * sample_bytes_;
    if (used < batch_bytes_) std::memset(buffers_[task.buffer].data + used, 0, batch_bytes_ - used);
  }

  // Read on every sample: an atomic, so workers do not contend for mu_.
  bool stopping() const { return stopping_.load(std::memory_order_relaxed); }

  // --- transfer thread: ready batches, in order, onto the device --------------
  void transfer_main() {
    try {
      for (std::uint64_t k = 0;; ++k) {
        ReadyBatch batch;
        const int slot = static_cast<int>(k % static_cast<std::uint64_t>(cfg_.device_slots));
        {
          std::unique_lock lock(mu_);
          ready_cv_.wait(lock, [&] { return stopping_ || (ready_.count(k) && slot_free_[static_cast<std::size_t>(slot)]); });
          if (stopping_) return;
          batch = ready_.at(k);
          ready_.erase(k);
          slot_free_[static_cast<std::size_t>(slot)] = false;
        }
        const std::uint64_t ticket = run_.device.copy_async(buffers_[batch.buffer], batch_bytes_, slot);
        {
          std::lock_guard lock(mu_);
          copied_.push_back({k, batch.buffer, slot, batch.good_samples, ticket});
        }
        copied_cv_.notify_one();
      }
    } catch (...) {
      fail(std::current_exception());
    }
  }

  // --- the step loop (the caller's thread plays the training loop) ------------
  bool limit_reached(std::uint64_t steps) const {
    if (run_.limits.batches && steps >= *run_.limits.batches) return true;
    if (run_.limits.duration && Clock::now() - start_ >= *run_.limits.duration) return true;
    if (run_.hooks.stop && run_.hooks.stop->load()) return true;
    return false;
  }

  void run_steps() {
    auto last_progress = Clock::now();
    std::uint64_t last_progress_steps = 0;
    for (std::uint64_t k = 0; !limit_reached(k); ++k) {
      StepRecord rec;
      rec.asked = Clock::now();
      CopiedBatch batch;
      if (!next_batch(k, batch)) break;
      if (transfers_) run_.device.wait(batch.ticket);
      rec.got = Clock::now();
      int ready_now = 0;
      {
        std::lock_guard lock(mu_);
        // The copy is done: the buffer may be refilled. Without a transfer
        // the step still reads it, so it is freed after the step.
        if (transfers_) free_buffers_.push_back(batch.buffer);
        --in_flight_;
        ready_now = static_cast<int>(ready_.size() + copied_.size());
        queue_.push_back({seconds_between(start_, rec.got), ready_now, in_flight_});
      }
      issue_next();

      StepInput input;
      input.host = buffers_[batch.buffer].data;
      input.device = transfers_ ? run_.device.device_slot(batch.slot) : static_cast<void*>(buffers_[batch.buffer].data);
      input.bytes = batch_bytes_;
      input.batch_size = cfg_.batch_size;
      input.sample_shape = run_.transform.sample_shape();
      run_.step.run(input);
      rec.finished = Clock::now();
      rec.good_samples = batch.good_samples;
      records_.push_back(rec);
      {
        std::lock_guard lock(mu_);
        slot_free_[static_cast<std::size_t>(batch.slot)] = true;
        if (!transfers_) free_buffers_.push_back(batch.buffer);
      }
      ready_cv_.notify_one();  // the transfer thread may wait for this slot
      start_next_epoch_if_done(k);

      if (run_.hooks.on_progress && rec.finished - last_progress >= std::chrono::milliseconds(500)) {
        report_progress(last_progress, last_progress_steps, ready_now);
        last_progress = rec.finished;
        last_progress_steps = records_.size();
      }
    }
    if (run_.hooks.stop && run_.hooks.stop->load()) stopped_early_ = true;
  }

  bool stop_requested() const { return run_.hooks.stop && run_.hooks.stop->load(); }

  // Batch k for the step: from the transfer thread, or (no transfer) straight
  // from the workers. False when the run stops first.
  bool next_batch(std::uint64_t k, CopiedBatch& batch) {
    std::unique_lock lock(mu_);
    // A stop flag set from a signal handler cannot notify: look at it often.
    constexpr auto kLook = std::chrono::milliseconds(50);
    if (transfers_) {
      while (!stopping_ && copied_.empty() && !stop_requested()) copied_cv_.wait_for(lock, kLook);
      if (stopping_ || copied_.empty()) return false;
      batch = copied_.front();
      copied_.pop_front();
      return true;
    }
    while (!stopping_ && !ready_.count(k) && !stop_requested()) ready_cv_.wait_for(lock, kLook);
    const auto it = ready_.find(k);
    if (stopping_ || it == ready_.end()) return false;
    batch = CopiedBatch{k, it->second.buffer, 0, it->second.good_samples, 0};
    ready_.erase(it);
    return true;
  }

  void report_progress(Clock::time_point since, std::uint64_t steps_then, int ready_now) {
    Progress p;
    p.elapsed_s = seconds_between(start_, Clock::now());
    p.batches = records_.size();
    const double dt = seconds_between(since, records_.back().finished);
    p.samples_per_s = dt > 0 ? static_cast<double>((records_.size() - steps_then) * static_cast<std::uint64_t>(cfg_.batch_size)) / dt : 0;
    double waited = 0;
    for (const auto& r : records_) waited += seconds_between(r.asked, r.got);
    p.starvation = p.elapsed_s > 0 ? waited / p.elapsed_s : 0;
    p.ready_batches = ready_now;
    run_.hooks.on_progress(p);
  }

  // --- figures ------------------------------------------------------------------
  LoaderFigures figures() const {
    LoaderFigures f;
    f.wall_s = records_.empty() ? 0 : seconds_between(start_, records_.back().finished);
    f.total_batches = records_.size();
    const std::uint64_t warmup = run_.limits.warmup_batches.value_or(
        static_cast<std::uint64_t>(cfg_.workers) * static_cast<std::uint64_t>(cfg_.prefetch_factor));
    std::size_t first = static_cast<std::size_t>(warmup);
    if (first >= records_.size()) {  // too short for a warm-up: use it all, and say so
      first = 0;
      f.steady_from_start = true;
    }
    f.warmup_batches = first;
    std::vector<double> waits;
    double waited = 0;
    double stepped = 0;
    for (std::size_t i = first; i < records_.size(); ++i) {
      const auto& r = records_[i];
      const double w = seconds_between(r.asked, r.got);
      waits.push_back(w * 1e3);
      waited += w;
      stepped += seconds_between(r.got, r.finished);
      f.samples += static_cast<std::uint64_t>(r.good_samples);
    }
    f.batches = waits.size();
    if (!waits.empty()) {
      f.window_s = seconds_between(records_[first].asked, records_.back().finished);
      // The rate and starvation of whole epochs: a window of part of one
      // holds its epoch refills unfairly often (batch_order.hpp).
      std::vector<double> waits_s(waits.size());
      std::transform(waits.begin(), waits.end(), waits_s.begin(), [](double ms) { return ms / 1e3; });
      const FairWindow fair = epoch_fair_window(waits_s, first, f.window_s, waited, order_.batches_per_epoch());
      f.samples_per_s = fair.seconds > 0 ? static_cast<double>(f.samples) / fair.seconds : 0;
      f.starvation = fair.seconds > 0 ? fair.waited_s / fair.seconds : 0;
      f.step_mean_ms = stepped * 1e3 / static_cast<double>(waits.size());
      std::sort(waits.begin(), waits.end());
      f.batch_wait_p50_ms = quantile_sorted(waits, 0.50);
      f.batch_wait_p99_ms = quantile_sorted(waits, 0.99);
    }
    f.epochs_started = records_.empty() ? 0 : order_.epoch_of(records_.size() - 1) + 1;
    f.bad_samples = bad_samples_;
    f.bad_sample_keys = bad_keys_;
    for (const auto& t : thread_figures_) {
      f.fetch.merge(t.fetch);
      f.transform.merge(t.transform);
      f.transform_cpu_ns += t.transform_cpu_ns;
      f.bytes_read += t.bytes_read;
    }
    f.queue = thin(queue_, 200);
    double ready_sum = 0;
    for (const auto& q : queue_) ready_sum += q.ready;
    f.mean_ready = queue_.empty() ? 0 : ready_sum / static_cast<double>(queue_.size());
    f.max_in_flight = max_in_flight_;
    f.transfer = run_.device.transfer_stats();
    f.h2d_gbps = f.transfer.busy_ns ? static_cast<double>(f.transfer.bytes) / static_cast<double>(f.transfer.busy_ns) : 0;
    f.pinned_bytes = pinned_bytes_;
    f.page_locked = cfg_.pin_memory && page_locked_;
    f.stopped_early = stopped_early_;
    return f;
  }

  static std::vector<QueuePoint> thin(const std::vector<QueuePoint>& all, std::size_t most) {
    if (all.size() <= most) return all;
    std::vector<QueuePoint> out;
    for (std::size_t i = 0; i < most; ++i) out.push_back(all[i * all.size() / most]);
    return out;
  }

  LoaderRun& run_;
  const LoaderConfig cfg_;
  const BatchOrder order_;
  const std::size_t sample_bytes_;
  const std::size_t batch_bytes_;
  const bool in_place_;
  const bool transfers_;  // false on the cpu backend: the step reads the host batch

  std::vector<PinnedBuffer> buffers_;
  std::vector<PageableBuffer> pageable_;
  std::uint64_t pinned_bytes_ = 0;
  bool page_locked_ = false;

  std::mutex mu_;
  std::vector<std::condition_variable> worker_cv_;  // worker w waits for queues_[w]
  std::condition_variable ready_cv_;                // the transfer thread: ready_ and slot_free_
  std::condition_variable copied_cv_;               // the step loop: copied_
  std::atomic<bool> stopping_{false};  // written under mu_ (for the waits), read anywhere
  std::exception_ptr failure_;
  std::deque<std::size_t> free_buffers_;
  std::vector<std::deque<Task>> queues_;
  std::map<std::uint64_t, ReadyBatch> ready_;
  std::deque<CopiedBatch> copied_;
  std::vector<bool> slot_free_;
  std::uint64_t next_issue_ = 0;
  // Batches of the loop's current epoch only (the first epoch's end at
  // first); no epochs when the order has none.
  std::uint64_t issue_limit_ = order_.batches_per_epoch() ? order_.batches_per_epoch() : UINT64_MAX;
  int in_flight_ = 0;
  int max_in_flight_ = 0;

  std::vector<std::thread> threads_;
  std::vector<ThreadFigures> thread_figures_;
  Clock::time_point start_;
  std::vector<StepRecord> records_;
  std::vector<QueuePoint> queue_;
  bool stopped_early_ = false;

  std::mutex bad_mu_;
  std::uint64_t bad_samples_ = 0;
  std::vector<std::string> bad_keys_;
};

void check_config(const LoaderRun& run) {
  const auto& c = run.config;
  auto positive = [](int v, const std::string& option) {
    if (v < 1) throw usage_error(fmt::format("{} {} must be at least 1", option, v));
  };
  positive(c.workers, spell(Setting::workers));
  positive(c.prefetch_factor, spell(Setting::prefetch));
  positive(c.batch_size, spell(Setting::batch_size));
  positive(c.io_depth, spell(Setting::io_depth));
  positive(c.device_slots, "device slots");
  if (run.samples.empty()) {
    throw usage_error(fmt::format("the dataset {} has no samples", run.source.describe()),
                      fmt::format("point {} at a directory, manifest or bucket prefix that holds samples",
                                  spell(Setting::data)));
  }
  if (c.drop_last && run.samples.size() < static_cast<std::size_t>(c.batch_size)) {
    throw usage_error(fmt::format("the dataset has {} samples, fewer than one batch of {}", run.samples.size(),
                                  c.batch_size),
                      fmt::format("lower {} or use a larger dataset", spell(Setting::batch_size)));
  }
  if (!run.limits.duration && !run.limits.batches && !run.hooks.stop) {
    throw usage_error("the loader run has no end",
                      fmt::format("give {} or {}", spell(Setting::duration), spell(Setting::batches)));
  }
}

}  // namespace

MemoryPlan plan_memory(const LoaderConfig& config, std::size_t sample_bytes) {
  MemoryPlan plan;
  plan.batch_bytes = static_cast<std::uint64_t>(sample_bytes) * static_cast<std::uint64_t>(std::max(config.batch_size, 0));
  plan.buffers = static_cast<std::uint64_t>(std::max(config.workers, 0)) * static_cast<std::uint64_t>(std::max(config.prefetch_factor, 0));
  plan.pinned_bytes = plan.buffers * plan.batch_bytes;
  plan.formula = fmt::format("{} workers x {} prefetch x {} samples x {} = {}", config.workers, config.prefetch_factor,
                             config.batch_size, format_bytes(sample_bytes), format_bytes(plan.pinned_bytes));
  return plan;
}

void check_memory_budget(const LoaderConfig& config, const MemoryPlan& plan) {
  if (config.mem_budget_bytes == 0 || plan.pinned_bytes <= config.mem_budget_bytes) return;
  throw usage_error(fmt::format("page-locked memory {} exceeds {} {}", plan.formula, spell(Setting::mem_budget),
                                format_bytes(config.mem_budget_bytes)),
                    fmt::format("lower {}, {} or {}, or raise {}", spell(Setting::workers), spell(Setting::prefetch),
                                spell(Setting::batch_size), spell(Setting::mem_budget)));
}

LoaderFigures run_loader(LoaderRun& run) {
  check_config(run);
  check_memory_budget(run.config, plan_memory(run.config, run.transform.output_bytes()));
  Pipeline pipeline(run);
  return pipeline.run();
}

}  // namespace gpufeed::loader
