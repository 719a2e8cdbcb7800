// The CUDA and HIP backends through dlopen(): end to end against the fake
// runtimes (tests/fixtures/fake_gpu_runtime: allocation, the non-blocking
// stream, async copies, one event per copy, every failure path), and against
// the real runtimes this machine has, which without a GPU must fail with the
// runtime's own error, never crash.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "backend_checks.hpp"
#include "fake_gpu_runtime.h"
#include "gpufeed/error.hpp"
#include "gpufeed/device/device_gpu.hpp"

namespace gpufeed::loader {
namespace {

struct Flavor {
  const char* name;     // backend name
  const char* fake;     // the fake runtime's path
  std::function<std::unique_ptr<DeviceBackend>(const std::string&)> open;
  const char* device;   // the fake's device name
  const char* version;  // "CUDA runtime 13.0"
  const char* host_alloc, *device_alloc, *memcpy_async, *event_sync, *device_count, *stream_create;
  const char* out_of_memory;  // the runtime's name for error 2
};

// gtest prints a failing parameter with this rather than as raw bytes.
void PrintTo(const Flavor& flavor, std::ostream* os) { *os << flavor.name; }

const Flavor kCuda{"cuda", GPUFEED_FAKE_CUDART, open_cuda_backend, "Fake NVIDIA GPU", "CUDA runtime 13.0",
                   "cudaHostAlloc", "cudaMalloc", "cudaMemcpyAsync", "cudaEventSynchronize",
                   "cudaGetDeviceCount", "cudaStreamCreateWithFlags", "cudaErrorMemoryAllocation"};
const Flavor kHip{"hip", GPUFEED_FAKE_HIP, open_hip_backend, "Fake AMD GPU", "HIP runtime 5.2",
                  "hipHostMalloc", "hipMalloc", "hipMemcpyAsync", "hipEventSynchronize",
                  "hipGetDeviceCount", "hipStreamCreateWithFlags", "hipErrorOutOfMemory"};

using testing::all_zero;
using testing::fill;

// The message of the gpufeed::Error that `f` throws ("" when none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "not one line: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no gpufeed::Error thrown";
  return "";
}

class FakeRuntime : public ::testing::TestWithParam<Flavor> {
 protected:
  void SetUp() override { unsetenv("GPUFEED_FAKE_GPU_RUNTIME"); }
  void TearDown() override { unsetenv("GPUFEED_FAKE_GPU_RUNTIME"); }
  static void fake_mode(const char* words) { setenv("GPUFEED_FAKE_GPU_RUNTIME", words, 1); }

  // The fake's counters. It stays loaded (the backend opens runtimes with
  // RTLD_NODELETE), so counters accumulate over the suite: compare deltas.
  fake_gpu_counters counters() {
    void* handle = dlopen(GetParam().fake, RTLD_NOW | RTLD_NOLOAD);
    if (handle == nullptr) handle = dlopen(GetParam().fake, RTLD_NOW);
    EXPECT_NE(handle, nullptr) << dlerror();
    fake_gpu_counters c{};
    if (handle == nullptr) return c;
    auto read = reinterpret_cast<fake_gpu_runtime_counters_fn>(dlsym(handle, "fake_gpu_runtime_counters"));
    EXPECT_NE(read, nullptr);
    if (read != nullptr) read(&c);
    dlclose(handle);
    return c;
  }
  std::unique_ptr<DeviceBackend> open() { return GetParam().open(GetParam().fake); }
};

TEST_P(FakeRuntime, OpensDeviceZeroOnANonBlockingStream) {
  const auto before = counters();
  auto backend = open();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->name(), GetParam().name);
  const std::string description = backend->description();
  EXPECT_NE(description.find(GetParam().device), std::string::npos) << description;
  EXPECT_NE(description.find(GetParam().version), std::string::npos) << description;
  EXPECT_NE(description.find(GetParam().fake), std::string::npos) << description;
  const auto after = counters();
  EXPECT_EQ(after.live_streams, before.live_streams + 1);
  EXPECT_EQ(after.last_stream_flags, 1u) << "the transfer stream must be created non-blocking";
}

// Copies are queued and run only when an event after them is synchronised
// (the fake's engine): waiting for the first copy must leave the later ones
// undone, which shows wait() synchronises that copy's own event only.
TEST_P(FakeRuntime, CopiesEndToEndAndWaitCoversOnlyItsOwnCopy) {
  const auto before = counters();
  auto backend = open();
  constexpr std::size_t kBytes = 1 << 20;
  std::vector<PinnedBuffer> sources;
  for (unsigned i = 0; i < 3; ++i) {
    sources.push_back(backend->allocate_pinned(kBytes));
    EXPECT_TRUE(sources.back().page_locked);
    fill(sources.back(), i + 1);
  }
  EXPECT_EQ(backend->pinned_bytes(), 3 * kBytes);
  backend->reserve_device_slots(3, kBytes);

  std::uint64_t tickets[3];
  for (int i = 0; i < 3; ++i) tickets[i] = backend->copy_async(sources[i], kBytes, i);
  EXPECT_EQ(backend->transfer_stats().copies, 0u) << "nothing has run yet";
  auto slot = [&](int i) { return backend->device_slot(i); };
  EXPECT_TRUE(all_zero(slot(0), kBytes));

  backend->wait(tickets[0]);
  EXPECT_EQ(std::memcmp(slot(0), sources[0].data, kBytes), 0);
  EXPECT_TRUE(all_zero(slot(1), kBytes)) << "wait(first) also ran the second copy";
  EXPECT_TRUE(all_zero(slot(2), kBytes));
  EXPECT_EQ(backend->transfer_stats().copies, 1u);

  backend->wait(tickets[2]);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(std::memcmp(slot(i), sources[i].data, kBytes), 0) << "slot " << i;
  backend->wait(tickets[1]);  // already done: returns at once
  const auto stats = backend->transfer_stats();
  EXPECT_EQ(stats.copies, 3u);
  EXPECT_EQ(stats.bytes, 3 * kBytes);

  const auto after = counters();
  EXPECT_EQ(after.memcpy_calls - before.memcpy_calls, 3);
  EXPECT_EQ(after.executed_copies - before.executed_copies, 3);
  EXPECT_EQ(after.event_syncs - before.event_syncs, 2) << "one event synchronisation per wait that blocked";
  EXPECT_EQ(after.default_stream_copies, before.default_stream_copies);
  EXPECT_EQ(after.wrong_kind_copies, before.wrong_kind_copies);
  EXPECT_EQ(after.bad_handles, before.bad_handles);
  for (auto& s : sources) backend->free_pinned(s);
  EXPECT_EQ(backend->pinned_bytes(), 0u);
}

TEST_P(FakeRuntime, TransferStatsPicksUpCopiesNobodyWaitedFor) {
  auto backend = open();
  PinnedBuffer src = backend->allocate_pinned(4096);
  backend->reserve_device_slots(1, 4096);
  const auto t1 = backend->copy_async(src, 4096, 0);
  const auto t2 = backend->copy_async(src, 4096, 0);
  backend->wait(t2);  // stream order: t1 is done too
  EXPECT_EQ(backend->transfer_stats().copies, 2u);
  backend->wait(t1);
  EXPECT_EQ(backend->transfer_stats().copies, 2u);
  EXPECT_THROW(backend->wait(t2 + 1), std::invalid_argument);
  backend->free_pinned(src);
}

// Several threads queue and wait at once: tickets stay in stream order, a
// wait never returns before its own copy, and no event is recycled while
// another thread still waits on it (the fake counts unknown handles).
TEST_P(FakeRuntime, ManyThreadsCopyAndWaitAtOnce) {
  const auto before = counters();
  auto backend = open();
  testing::expect_copies_from_threads_land(*backend, 4, 50, 16 << 10);
  EXPECT_EQ(counters().bad_handles, before.bad_handles);
}

TEST_P(FakeRuntime, DestructorFreesEverythingItAllocated) {
  const auto before = counters();
  {
    auto backend = open();
    backend->allocate_pinned(8192);  // never freed by the caller
    backend->reserve_device_slots(4, 8192);
    PinnedBuffer src = backend->allocate_pinned(8192);
    for (int i = 0; i < 10; ++i) backend->copy_async(src, 8192, i % 4);  // never waited for
  }
  const auto after = counters();
  EXPECT_EQ(after.live_host_allocs, before.live_host_allocs);
  EXPECT_EQ(after.live_device_allocs, before.live_device_allocs);
  EXPECT_EQ(after.live_streams, before.live_streams);
  EXPECT_EQ(after.live_events, before.live_events);
  EXPECT_EQ(after.bad_handles, before.bad_handles);
  EXPECT_EQ(after.executed_copies - before.executed_copies, 10) << "queued copies must finish before memory goes";
}

TEST_P(FakeRuntime, ReslottingReplacesTheDeviceAllocations) {
  const auto before = counters();
  auto backend = open();
  backend->reserve_device_slots(4, 4096);
  backend->reserve_device_slots(2, 8192);
  EXPECT_EQ(counters().live_device_allocs, before.live_device_allocs + 2);
  EXPECT_THROW(backend->device_slot(2), std::invalid_argument);
}

TEST_P(FakeRuntime, AllocationFailuresNameTheCallAndTheError) {
  auto backend = open();
  fake_mode("fail-host-alloc");
  auto message = error_of([&] { backend->allocate_pinned(64 << 20); });
  EXPECT_NE(message.find(std::string(GetParam().host_alloc) + " returned 2 (" + GetParam().out_of_memory),
            std::string::npos) << message;
  EXPECT_NE(message.find("64.0 MiB"), std::string::npos) << message;
  EXPECT_NE(message.find(GetParam().fake), std::string::npos) << message;

  fake_mode("fail-malloc");
  const auto before = counters();
  message = error_of([&] { backend->reserve_device_slots(2, 4096); });
  EXPECT_NE(message.find(std::string(GetParam().device_alloc) + " returned 2"), std::string::npos) << message;
  EXPECT_NE(message.find("device slot 0 of 2"), std::string::npos) << message;
  EXPECT_EQ(counters().live_device_allocs, before.live_device_allocs);
}

TEST_P(FakeRuntime, CopyAndWaitFailuresNameTheCallAndTheError) {
  auto backend = open();
  PinnedBuffer src = backend->allocate_pinned(4096);
  backend->reserve_device_slots(1, 4096);
  fake_mode("fail-memcpy");
  auto message = error_of([&] { backend->copy_async(src, 4096, 0); });
  EXPECT_NE(message.find(std::string(GetParam().memcpy_async) + " returned 1"), std::string::npos) << message;

  unsetenv("GPUFEED_FAKE_GPU_RUNTIME");
  const auto ticket = backend->copy_async(src, 4096, 0);
  EXPECT_EQ(ticket, 1u) << "a failed copy must not use up a ticket";
  fake_mode("fail-event-sync");
  message = error_of([&] { backend->wait(ticket); });
  EXPECT_NE(message.find(std::string(GetParam().event_sync) + " returned 700"), std::string::npos) << message;
  unsetenv("GPUFEED_FAKE_GPU_RUNTIME");
  backend->wait(ticket);  // the runtime recovered: the same wait succeeds
  backend->free_pinned(src);
}

TEST_P(FakeRuntime, NoDeviceIsAClearErrorNotACrash) {
  fake_mode("no-driver");
  auto message = error_of([&] { open(); });
  EXPECT_NE(message.find(std::string(GetParam().device_count) + " returned 35"), std::string::npos) << message;
  EXPECT_NE(message.find("InsufficientDriver"), std::string::npos) << message;

  fake_mode("no-device");
  message = error_of([&] { open(); });
  EXPECT_NE(message.find(std::string(GetParam().device_count) + " returned 100"), std::string::npos) << message;

  fake_mode("zero-devices");
  message = error_of([&] { open(); });
  EXPECT_NE(message.find("found none"), std::string::npos) << message;

  fake_mode("fail-stream");
  message = error_of([&] { open(); });
  EXPECT_NE(message.find(std::string(GetParam().stream_create) + " returned 101"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(Device, FakeRuntime, ::testing::Values(kCuda, kHip),
                         [](const auto& p) { return std::string(p.param.name); });

TEST(RuntimeLibrary, ALibraryThatIsNotARuntimeIsNamed) {
  auto message = error_of([] { open_cuda_backend("libm.so.6"); });
  EXPECT_NE(message.find("libm.so.6 has no cudaGetDeviceCount: not a CUDA runtime"), std::string::npos) << message;
  message = error_of([] { open_hip_backend("libm.so.6"); });
  EXPECT_NE(message.find("not a HIP runtime"), std::string::npos) << message;
}

TEST(RuntimeLibrary, AMissingLibraryIsNamed) {
  const auto message = error_of([] { open_cuda_backend("/nonexistent/libcudart.so.13"); });
  EXPECT_NE(message.find("/nonexistent/libcudart.so.13"), std::string::npos) << message;
  try {
    open_hip_backend("/nonexistent/libamdhip64.so");
    ADD_FAILURE() << "opened a missing HIP runtime";
  } catch (const Error& e) {
    EXPECT_NE(e.hint().find("--device host"), std::string::npos) << e.hint();
  }
}

// Whether the NVIDIA kernel driver is present (then tests/gpu covers CUDA).
bool nvidia_driver_present() { return std::filesystem::exists("/proc/driver/nvidia/version"); }

TEST(RealRuntime, CudaRuntimeWithoutADriverFailsWithItsOwnError) {
  std::string library;
  for (const auto& candidate : cuda_runtime_candidates()) {
    if (void* h = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      dlclose(h);
      library = candidate;
      break;
    }
  }
  if (library.empty()) GTEST_SKIP() << "no CUDA runtime (libcudart) on this machine";
  if (nvidia_driver_present()) GTEST_SKIP() << "an NVIDIA driver is loaded: the gpu suite tests the real device";
  const auto message = error_of([&] { open_cuda_backend(library); });
  std::printf("%s: %s\n", library.c_str(), message.c_str());
  EXPECT_NE(message.find("cudaGetDeviceCount returned"), std::string::npos) << message;
  EXPECT_NE(message.find("cudaError"), std::string::npos) << message;
}

TEST(RealRuntime, HipRuntimeWithoutAGpuFailsWithItsOwnError) {
  std::string library;
  for (const auto& candidate : hip_runtime_candidates()) {
    if (void* h = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      dlclose(h);
      library = candidate;
      break;
    }
  }
  if (library.empty()) {
    GTEST_SKIP() << "no HIP runtime (libamdhip64.so.6/.5) on this machine (Debian: apt-get install libamdhip64-5)";
  }
  if (std::filesystem::exists("/dev/kfd")) GTEST_SKIP() << "an AMD GPU driver (/dev/kfd) is present";
  const auto message = error_of([&] { open_hip_backend(library); });
  std::printf("%s: %s\n", library.c_str(), message.c_str());
  EXPECT_NE(message.find("hipGetDeviceCount returned 100"), std::string::npos) << message;
}

}  // namespace
}  // namespace gpufeed::loader
