// The built-in loader's PyTorch DataLoader semantics, on fakes: order,
// exactly-once per epoch, round-robin whole batches, the in-flight bound,
// io_depth, bad samples, the memory budget and stopping.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "gpufeed/loader/basic_steps.hpp"
#include "gpufeed/loader/batch_order.hpp"
#include "gpufeed/loader/pipeline.hpp"
#include "gpufeed/thread_cpu.hpp"
#include "support/fake_loader.hpp"

namespace gpufeed::loader {
namespace {

using namespace std::chrono_literals;
using testing::FakeDevice;
using testing::FakeSource;
using testing::RecordingStep;

struct Harness {
  explicit Harness(std::size_t samples, std::chrono::microseconds latency = {}, std::chrono::microseconds step = {},
                   bool transfers = true)
      : source(samples, latency), device(transfers), step_runner(step), transform(make_copy_transform(16)),
        listed(source.list()) {}
  LoaderFigures run(LoaderConfig config, RunLimits limits, RunHooks hooks = {}) {
    LoaderRun r{source, listed, *transform, device, step_runner, config, limits, hooks};
    return run_loader(r);
  }
  FakeSource source;
  FakeDevice device;
  RecordingStep step_runner;
  std::unique_ptr<SampleTransform> transform;
  std::vector<SampleInfo> listed;
};

RunLimits batches(std::uint64_t n, std::optional<std::uint64_t> warmup = std::nullopt) {
  RunLimits limits;
  limits.batches = n;
  limits.warmup_batches = warmup;
  return limits;
}

LoaderConfig config(int workers, int prefetch, int batch) {
  LoaderConfig c;
  c.workers = workers;
  c.prefetch_factor = prefetch;
  c.batch_size = batch;
  return c;
}

TEST(BatchOrder, SequentialBatchesCoverTheEpochOnceAndDropTheRemainder) {
  BatchOrder order(10, 3, /*drop_last=*/true, /*shuffle=*/false, 0);
  EXPECT_EQ(order.batches_per_epoch(), 3u);
  EXPECT_EQ(order.batch(0), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(order.batch(2), (std::vector<std::size_t>{6, 7, 8}));
  EXPECT_EQ(order.batch(3), (std::vector<std::size_t>{0, 1, 2}));  // epoch 1
  EXPECT_EQ(order.epoch_of(5), 1u);
  BatchOrder keep(10, 3, false, false, 0);
  EXPECT_EQ(keep.batches_per_epoch(), 4u);
  EXPECT_EQ(keep.batch(3), (std::vector<std::size_t>{9}));
}

TEST(BatchOrder, ShuffleIsAPermutationPerEpochAndReproducible) {
  BatchOrder a(100, 10, true, true, 42), b(100, 10, true, true, 42);
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    std::multiset<std::size_t> seen;
    for (std::uint64_t k = 0; k < 10; ++k) {
      const auto batch = a.batch(epoch * 10 + k);
      EXPECT_EQ(batch, b.batch(epoch * 10 + k));
      seen.insert(batch.begin(), batch.end());
    }
    EXPECT_EQ(seen.size(), 100u);
    EXPECT_EQ(std::set<std::size_t>(seen.begin(), seen.end()).size(), 100u) << "epoch " << epoch;
  }
  EXPECT_NE(a.batch(0), a.batch(10)) << "each epoch has its own order";
}

TEST(Pipeline, DeliversBatchesInOrderAndEverySampleOncePerEpoch) {
  Harness h(64);
  const auto f = h.run(config(4, 2, 8), batches(16));  // two epochs of 8 batches
  ASSERT_EQ(h.step_runner.batches.size(), 16u);
  for (std::size_t k = 0; k < 16; ++k) {
    for (std::size_t j = 0; j < 8; ++j) EXPECT_EQ(h.step_runner.batches[k][j], (k % 8) * 8 + j) << "batch " << k;
  }
  EXPECT_EQ(f.total_batches, 16u);
  EXPECT_EQ(f.epochs_started, 2u);
}

TEST(Pipeline, EachWorkerBuildsWholeBatchesRoundRobin) {
  Harness h(96);
  h.run(config(3, 2, 8), batches(12));
  const auto readers = h.source.readers();
  std::vector<std::thread::id> builder(12);
  for (std::size_t k = 0; k < 12; ++k) {
    builder[k] = readers.at(k * 8);
    for (std::size_t j = 1; j < 8; ++j) EXPECT_EQ(readers.at(k * 8 + j), builder[k]) << "batch " << k << " split";
  }
  for (std::size_t k = 3; k < 12; ++k) EXPECT_EQ(builder[k], builder[k - 3]) << "batch " << k;
  EXPECT_NE(builder[0], builder[1]);
  EXPECT_NE(builder[1], builder[2]);
}

// A step that notes how many samples had been read when it began.
class ReadCountingStep final : public StepRunner {
 public:
  ReadCountingStep(const FakeSource& source, std::chrono::microseconds duration) : source_(source), duration_(duration) {}
  std::string describe() const override { return "read-counting step"; }
  void run(const StepInput&) override {
    reads_at_start.push_back(source_.read_log().size());
    std::this_thread::sleep_for(duration_);
  }
  std::vector<std::size_t> reads_at_start;

 private:
  const FakeSource& source_;
  std::chrono::microseconds duration_;
};

// PyTorch's iterator for an epoch issues only that epoch's batches; the next
// epoch's are issued when the loop asks past the last one, after its step.
TEST(Pipeline, TheNextEpochIsIssuedOnlyAfterTheLastStepOfThisOne) {
  FakeSource source(40);  // 5 batches of 8 an epoch
  FakeDevice device(true);
  ReadCountingStep step(source, 5ms);  // workers would run far ahead meanwhile
  const auto transform = make_copy_transform(16);
  const auto listed = source.list();
  LoaderRun r{source, listed, *transform, device, step, config(3, 4, 8), batches(10), {}};
  run_loader(r);
  ASSERT_EQ(step.reads_at_start.size(), 10u);
  // The epoch's last step began with all 40 samples read and none more,
  // though 12 batches could be in flight.
  EXPECT_EQ(step.reads_at_start[4], 40u);
  EXPECT_GT(step.reads_at_start[5], 40u);
  // Round robin starts again at worker 0: epoch 1's first batch (global 5)
  // is built by the thread that built batch 0, not by batch 5 % 3's.
  const auto log = source.read_log();
  // Epoch 0's 40 reads all come first (asserted above); in order, sample i
  // is in batch i / 8 of its epoch.
  std::map<std::uint64_t, std::thread::id> first_reader;  // global batch -> builder
  for (std::size_t n = 0; n < log.size(); ++n) first_reader.emplace(n / 40 * 5 + log[n].first / 8, log[n].second);
  EXPECT_EQ(first_reader.at(5), first_reader.at(0));
  EXPECT_EQ(first_reader.at(6), first_reader.at(1));
  EXPECT_NE(first_reader.at(5), first_reader.at(2));
}

// Epochs of 5 steps; each epoch's first batch waits a 200 ms refill, the
// others 10 ms. A window counts the refills it saw at their mean, times the
// epochs it spans.
TEST(EpochFairWindow, CountsEachEpochsRefillInProportionToTheStepsSeen) {
  auto waits = [](std::uint64_t first, std::size_t n) {
    std::vector<double> w;
    for (std::uint64_t k = first; k < first + n; ++k) w.push_back(k % 5 == 0 ? 0.2 : 0.01);
    return w;
  };
  // Steps 3-12 see two refills in two epochs' worth of steps: as measured.
  auto f = epoch_fair_window(waits(3, 10), 3, 2.0, 0.48, 5);
  EXPECT_EQ(f.refills_seen, 2);
  EXPECT_DOUBLE_EQ(f.seconds, 2.0);
  EXPECT_DOUBLE_EQ(f.waited_s, 0.48);
  // Steps 3-9 see one refill in 7/5 of an epoch: 0.08 s more.
  f = epoch_fair_window(waits(3, 7), 3, 1.0, 0.26, 5);
  EXPECT_NEAR(f.seconds, 1.08, 1e-12);
  EXPECT_NEAR(f.waited_s, 0.34, 1e-12);
  // Steps 5-7 see one refill in 3/5 of an epoch: 0.08 s less.
  f = epoch_fair_window(waits(5, 3), 5, 0.5, 0.22, 5);
  EXPECT_NEAR(f.seconds, 0.42, 1e-12);
  // No refill seen, no epochs, or only step 0 (the start-up): as measured.
  EXPECT_EQ(epoch_fair_window(waits(6, 4), 6, 0.5, 0.04, 5).refills_seen, 0);
  EXPECT_DOUBLE_EQ(epoch_fair_window(waits(6, 4), 6, 0.5, 0.04, 5).seconds, 0.5);
  EXPECT_DOUBLE_EQ(epoch_fair_window(waits(3, 10), 3, 2.0, 0.48, 0).seconds, 2.0);
  EXPECT_EQ(epoch_fair_window(waits(0, 4), 0, 0.5, 0.23, 5).refills_seen, 0);
}

TEST(Pipeline, InFlightBatchesNeverExceedPrefetchTimesWorkers) {
  Harness h(4096, 100us, 2ms);  // a slow step lets workers run ahead as far as allowed
  const auto f = h.run(config(3, 2, 4), batches(40));
  EXPECT_EQ(f.max_in_flight, 6);
  for (const auto& q : f.queue) EXPECT_LE(q.in_flight, 6);
  // Reads happen only for issued batches: at most 40 consumed + 6 in flight.
  EXPECT_LE(h.source.reads().size(), (40u + 6u) * 4u);
}

// The cpu backend copies nothing: the step reads the batch where the workers
// collated it, so that buffer must not be handed to a worker until the step
// ends, while the in-flight bound stays prefetch x workers.
class RereadingStep final : public StepRunner {
 public:
  std::string describe() const override { return "rereading step"; }
  void run(const StepInput& in) override {
    if (in.device != in.host) mismatches++;
    const auto* bytes = static_cast<const std::byte*>(in.device);
    const std::vector<std::byte> before(bytes, bytes + in.bytes);
    std::this_thread::sleep_for(1ms);  // workers refill every free buffer meanwhile
    if (std::memcmp(before.data(), bytes, in.bytes) != 0) mismatches++;
    std::uint64_t first = 0;
    std::memcpy(&first, bytes, sizeof first);
    firsts.push_back(first);
  }
  int mismatches = 0;
  std::vector<std::uint64_t> firsts;
};

TEST(Pipeline, WithoutATransferTheStepReadsItsHostBatchUntouched) {
  FakeSource source(256);
  FakeDevice device(/*transfers=*/false);
  RereadingStep step;
  auto transform = make_copy_transform(16);
  const auto listed = source.list();
  LoaderRun r{source, listed, *transform, device, step, config(3, 2, 4), batches(40), {}};
  const auto f = run_loader(r);
  EXPECT_EQ(step.mismatches, 0);
  ASSERT_EQ(step.firsts.size(), 40u);
  for (std::size_t k = 0; k < 40; ++k) EXPECT_EQ(step.firsts[k], (k % 64) * 4) << "batch " << k;
  EXPECT_EQ(f.max_in_flight, 6);
  // The step's own buffer is extra: while it runs, 6 others stay issued
  // (recorded just after a batch is taken, so 5; a fast source keeps them full).
  ASSERT_GT(f.queue.size(), 10u);
  for (std::size_t k = 10; k < f.queue.size(); ++k) EXPECT_GE(f.queue[k].in_flight, 5) << "step " << k;
  EXPECT_EQ(f.transfer.copies, 0u);
  EXPECT_EQ(device.pinned_bytes(), 0u);
}

// Pageable batches (pin_memory off, or the cpu backend) start on a page, as
// page-locked ones do: the kernel's copy into them is measurably faster.
class AlignmentStep final : public StepRunner {
 public:
  std::string describe() const override { return "alignment step"; }
  void run(const StepInput& in) override {
    if (reinterpret_cast<std::uintptr_t>(in.host) % 4096 != 0) misaligned++;
    steps++;
  }
  int misaligned = 0;
  int steps = 0;
};

TEST(Pipeline, PageableBatchBuffersArePageAligned) {
  for (const bool transfers : {true, false}) {
    FakeSource source(64);
    FakeDevice device(transfers);
    AlignmentStep step;
    auto transform = make_copy_transform(16);
    const auto listed = source.list();
    LoaderConfig c = config(2, 2, 3);
    c.pin_memory = false;
    LoaderRun r{source, listed, *transform, device, step, c, batches(12), {}};
    run_loader(r);
    EXPECT_EQ(step.steps, 12) << "transfers " << transfers;
    EXPECT_EQ(step.misaligned, 0) << "transfers " << transfers;
  }
}

// tune --from: the built-in transform plus the CPU a job's workers pay on
// top; everything else is the inner transform's.
TEST(Transforms, ExtraCpuKeepsTheInnerTransformsShapeAndBytes) {
  auto plain = make_copy_transform(16);
  EXPECT_EQ(with_extra_cpu(make_copy_transform(16), 0)->describe(), plain->describe()) << "0 us: unchanged";
  auto extra = with_extra_cpu(make_copy_transform(16), 250);
  EXPECT_EQ(extra->output_bytes(), 16u);
  EXPECT_TRUE(extra->in_place());
  EXPECT_NE(extra->describe().find("+ 250 us of CPU work"), std::string::npos) << extra->describe();
  std::vector<std::byte> in(10, std::byte{7}), out(16, std::byte{1});
  extra->apply("k", in, out);
  EXPECT_EQ(out[9], std::byte{7});
  EXPECT_EQ(out[10], std::byte{0});  // zero-padded as the copy does
}

namespace {

double thread_cpu_ms() { return static_cast<double>(gpufeed::thread_cpu_ns()) / 1e6; }

// Spends `ms` of this thread's CPU time per sample, however fast the core.
class CpuTimeTransform final : public gpufeed::loader::SampleTransform {
 public:
  explicit CpuTimeTransform(double ms) : ms_(ms) {}
  std::string describe() const override { return "cpu-time"; }
  std::size_t output_bytes() const override { return 4; }
  std::vector<std::int64_t> sample_shape() const override { return {4}; }
  void apply(const std::string&, std::span<const std::byte>, std::span<std::byte> out) override {
    const double until = thread_cpu_ms() + ms_;
    volatile std::uint64_t x = 0;
    while (thread_cpu_ms() < until) x = x + 1;
    out[0] = std::byte{9};
  }

 private:
  double ms_;
};

}  // namespace

// tune --pytorch-probe: the trials pay the PIL pipeline's ratio to the
// built-in decode, in CPU time, sample by sample.
TEST(Transforms, CpuScaleMultipliesEachSamplesCpuTime) {
  EXPECT_EQ(with_cpu_scale(std::make_unique<CpuTimeTransform>(1), 1.0)->describe(), "cpu-time") << "x1: unchanged";
  EXPECT_EQ(with_cpu_scale(std::make_unique<CpuTimeTransform>(1), 0.8)->describe(), "cpu-time") << "below 1: unchanged";
  auto scaled = with_cpu_scale(std::make_unique<CpuTimeTransform>(2), 2.5);
  EXPECT_EQ(scaled->describe(), "cpu-time, its CPU x2.50");
  EXPECT_EQ(scaled->output_bytes(), 4u);
  std::vector<std::byte> in(4), out(4);
  for (int i = 0; i < 3; ++i) {
    const double t0 = thread_cpu_ms();
    scaled->apply("k", in, out);
    const double spent = thread_cpu_ms() - t0;
    EXPECT_GE(spent, 2 * 2.5 - 0.01);
    EXPECT_LT(spent, 2 * 2.5 + 1.0) << "the spin stops once it has spent its share";
  }
  EXPECT_EQ(out[0], std::byte{9});
}

// The workers' CPU time in their transforms, which tune's trials read as
// the CPU per sample (no wait for a core); none for an in-place copy.
TEST(Pipeline, WorkersTimeTheirTransformsCpu) {
  Harness h(64);
  h.transform = std::make_unique<CpuTimeTransform>(0.5);
  const auto f = h.run(config(2, 2, 4), batches(6));
  ASSERT_GT(f.transform.count, 0u);
  const double per_sample_ms = static_cast<double>(f.transform_cpu_ns) / 1e6 / static_cast<double>(f.transform.count);
  EXPECT_GE(per_sample_ms, 0.5 - 0.01);
  EXPECT_LT(per_sample_ms, 0.5 + 0.3);
  Harness copy(64);
  EXPECT_EQ(copy.run(config(2, 2, 4), batches(6)).transform_cpu_ns, 0u);
}

TEST(Pipeline, WorkersReplayTheJobsCallsPerSampleBeforeEachRead) {
  Harness plain(256);
  plain.run(config(2, 2, 8), batches(4, 0));
  EXPECT_EQ(plain.source.stats.load(), 0) << "open + read: no stat";
  Harness h(256);
  auto c = config(2, 2, 8);
  c.stats_per_sample = 1;
  c.extra_opens_per_sample = 1;
  const auto f = h.run(c, batches(4, 0));
  const int samples = static_cast<int>(f.total_batches) * 8;
  EXPECT_GE(h.source.stats.load(), samples) << "one stat per sample built";
  EXPECT_EQ(h.source.stats.load(), h.source.opens.load());
}

TEST(Pipeline, WorkersReadOneSampleAtATimeUnlessIoDepthAllowsMore) {
  {
    Harness h(256, 2ms);
    h.run(config(2, 2, 8), batches(6));
    EXPECT_LE(h.source.max_concurrent(), 2);
  }
  {
    Harness h(256, 2ms);
    auto c = config(2, 2, 8);
    c.io_depth = 4;
    h.run(c, batches(6));
    EXPECT_GT(h.source.max_concurrent(), 2);
    EXPECT_LE(h.source.max_concurrent(), 8);
    for (std::size_t k = 0; k < 6; ++k) {
      for (std::size_t j = 0; j < 8; ++j) EXPECT_EQ(h.step_runner.batches[k][j], k * 8 + j);
    }
  }
}

TEST(Pipeline, BadSampleStopsTheRunNamingTheSample) {
  Harness h(64);
  h.source.mark_bad(13);
  try {
    h.run(config(2, 2, 4), batches(10));
    FAIL() << "expected a SampleError";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.key(), "s/13");
    EXPECT_NE(std::string(e.what()).find("s/13"), std::string::npos);
  }
}

TEST(Pipeline, SkipBadCountsBadSamplesAndGoesOn) {
  Harness h(64);
  h.source.mark_bad(13);
  h.source.mark_bad(14);
  auto c = config(2, 2, 4);
  c.skip_bad = true;
  const auto f = h.run(c, batches(8, 0));
  EXPECT_EQ(f.bad_samples, 2u);
  EXPECT_EQ(f.samples, 30u);  // 8 batches x 4 - 2
  ASSERT_FALSE(f.bad_sample_keys.empty());
  EXPECT_NE(f.bad_sample_keys[0].find("s/13"), std::string::npos);
}

TEST(Pipeline, RefusesAConfigOverTheMemoryBudgetWithTheFormula) {
  Harness h(64);
  auto c = config(8, 4, 16);
  c.mem_budget_bytes = 4096;  // 8 x 4 x 16 x 16 B = 8 KiB
  try {
    h.run(c, batches(1));
    FAIL() << "expected a usage error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("8 workers x 4 prefetch x 16 samples x 16 B = 8 KiB"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(h.device.pinned_bytes(), 0u) << "nothing allocated for a refused config";
}

TEST(Pipeline, PinnedMemoryIsAccountedAndReturned) {
  Harness h(64);
  const auto f = h.run(config(2, 3, 4), batches(4));
  EXPECT_EQ(f.pinned_bytes, 2u * 3u * 4u * 16u);
  EXPECT_TRUE(f.page_locked);
  EXPECT_EQ(h.device.pinned_bytes(), 0u);
}

// A device whose copies stay in flight until waited for: it counts host
// buffers freed while a copy from them was still unwaited.
class DeferredCopyDevice final : public DeviceBackend {
 public:
  std::string name() const override { return "deferred"; }
  std::string description() const override { return "copies finish when waited for"; }
  PinnedBuffer allocate_pinned(std::size_t bytes) override { return {new std::byte[bytes], bytes, true}; }
  void free_pinned(PinnedBuffer b) noexcept override {
    std::lock_guard lock(mu_);
    for (const auto& [ticket, src] : pending_) {
      if (src == b.data) ++freed_under_copy;
    }
    delete[] b.data;
  }
  std::uint64_t pinned_bytes() const override { return 0; }
  void reserve_device_slots(int count, std::size_t bytes) override {
    slots_.assign(static_cast<std::size_t>(count), std::vector<std::byte>(bytes));
  }
  void* device_slot(int slot) override { return slots_[static_cast<std::size_t>(slot)].data(); }
  std::uint64_t copy_async(const PinnedBuffer& src, std::size_t, int) override {
    std::lock_guard lock(mu_);
    pending_.emplace_back(++issued, src.data);
    return issued;
  }
  void wait(std::uint64_t ticket) override {
    std::lock_guard lock(mu_);
    std::erase_if(pending_, [&](const auto& p) { return p.first <= ticket; });
  }
  TransferStats transfer_stats() const override { return {}; }
  std::uint64_t issued = 0;
  int freed_under_copy = 0;

 private:
  std::mutex mu_;
  std::vector<std::pair<std::uint64_t, const std::byte*>> pending_;
  std::vector<std::vector<std::byte>> slots_;
};

TEST(Pipeline, CopiesQueuedWhenTheRunEndsFinishBeforeTheirBuffersAreFreed) {
  // The transfer thread copies ahead of the step (into the spare device
  // slot); when the run ends, those copies were never waited for by a step.
  FakeSource source(256);
  DeferredCopyDevice device;
  RecordingStep step(2ms);
  auto transform = make_copy_transform(16);
  const auto listed = source.list();
  LoaderConfig c = config(2, 4, 4);
  c.device_slots = 3;
  LoaderRun r{source, listed, *transform, device, step, c, batches(6), {}};
  run_loader(r);
  EXPECT_GT(device.issued, 6u) << "no copy was queued ahead of the steps: the test did not test anything";
  EXPECT_EQ(device.freed_under_copy, 0) << "a host buffer was freed under a copy still in flight";
}

TEST(Pipeline, RejectsEmptyDatasetsAndDatasetsSmallerThanABatch) {
  Harness empty(0);
  EXPECT_THROW(empty.run(config(1, 1, 4), batches(1)), Error);
  Harness small(3);
  EXPECT_THROW(small.run(config(1, 1, 4), batches(1)), Error);
  Harness h(16);
  EXPECT_THROW(h.run(config(0, 1, 4), batches(1)), Error);
  EXPECT_THROW(h.run(config(1, 1, 4), {}), Error) << "a run with no end";
}

TEST(Pipeline, StopFlagEndsTheRunAndKeepsTheFigures) {
  Harness h(1 << 16, 1ms);
  std::atomic<bool> stop{false};
  RunHooks hooks;
  hooks.stop = &stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    stop = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  const auto f = h.run(config(2, 2, 4), {}, hooks);
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_TRUE(f.stopped_early);
  EXPECT_GT(f.total_batches, 0u);
}

TEST(Pipeline, WorkerStartHookRunsOncePerWorker) {
  Harness h(64);
  std::mutex mu;
  std::set<int> started;
  RunHooks hooks;
  hooks.on_worker_start = [&](int w) {
    std::lock_guard lock(mu);
    started.insert(w);
  };
  h.run(config(3, 1, 4), batches(3), hooks);
  EXPECT_EQ(started, (std::set<int>{0, 1, 2}));
}

TEST(Pipeline, AFailingHookStopsTheRunWithItsError) {
  Harness h(64);
  RunHooks hooks;
  hooks.on_worker_start = [](int) { throw runtime_error("cannot bind"); };
  EXPECT_THROW(h.run(config(2, 1, 4), batches(3), hooks), Error);
}

// Little's law with constant latency: W workers, t per sample, batch B and a
// free step deliver W / t samples/s. Sleep-based, so cores do not limit it;
// the bound is loose because sleeps overshoot on a busy machine.
TEST(Pipeline, ThroughputFollowsLittlesLawWhenWorkersAreTheLimit) {
  Harness h(1 << 14, 2ms);
  const auto f = h.run(config(4, 2, 4), batches(120));
  const double expected = 4 / 0.002;
  EXPECT_GT(f.samples_per_s, 0.6 * expected);
  EXPECT_LT(f.samples_per_s, 1.05 * expected);
  EXPECT_GT(f.starvation, 0.8) << "the step takes no time: the loop waits for data";
}

TEST(Pipeline, AWellFedStepHardlyWaits) {
  Harness h(1 << 14, 100us, 10ms);
  const auto f = h.run(config(4, 2, 4), batches(40));
  EXPECT_LT(f.starvation, 0.1);
  EXPECT_GT(f.mean_ready, 1.0);
}

TEST(BasicSteps, StepTimeParsesMeanAndSpread) {
  EXPECT_EQ(parse_step_time("40").mean_ms, 40);
  EXPECT_EQ(parse_step_time("40:5").spread_ms, 5);
  EXPECT_THROW(parse_step_time("fast"), Error);
  EXPECT_THROW(parse_step_time("-3"), Error);
  EXPECT_THROW(parse_step_time("40:"), Error);
}

TEST(BasicSteps, CopyTransformPadsAndTruncates) {
  auto t = make_copy_transform(4);
  std::vector<std::byte> out(4, std::byte{0xff});
  const std::vector<std::byte> two{std::byte{1}, std::byte{2}};
  t->apply("k", two, out);
  EXPECT_EQ(out, (std::vector<std::byte>{std::byte{1}, std::byte{2}, std::byte{0}, std::byte{0}}));
  const std::vector<std::byte> six(6, std::byte{7});
  t->apply("k", six, out);
  EXPECT_EQ(out, std::vector<std::byte>(4, std::byte{7}));
}

}  // namespace
}  // namespace gpufeed::loader
