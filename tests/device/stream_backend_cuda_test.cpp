// On a machine with an NVIDIA GPU: the CUDA backend copies batches to the
// device and the bytes arrive intact (read back with cudaMemcpy from the same
// runtime), with one wait per copy and the transfer timed on the device.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "gpufeed/error.hpp"
#include "gpufeed/device/device_gpu.hpp"

namespace gpufeed::loader {
namespace {

constexpr int kDeviceToHost = 2;  // cudaMemcpyDeviceToHost
using MemcpyFn = int (*)(void*, const void*, std::size_t, int);

struct OpenedCuda {
  std::unique_ptr<DeviceBackend> backend;
  std::string library;
  std::string why_not;
};

OpenedCuda open_cuda() {
  OpenedCuda out;
  for (const auto& library : cuda_runtime_candidates()) {
    try {
      out.backend = open_cuda_backend(library);
      out.library = library;
      return out;
    } catch (const Error& e) {
      out.why_not += (out.why_not.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  return out;
}

TEST(CudaBackend, CopiesBatchesToTheDeviceIntact) {
  auto cuda = open_cuda();
  if (!cuda.backend) GTEST_SKIP() << "no usable CUDA device: " << cuda.why_not;
  DeviceBackend& backend = *cuda.backend;
  std::printf("%s\n", backend.description().c_str());
  void* runtime = dlopen(cuda.library.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(runtime, nullptr);
  auto memcpy_sync = reinterpret_cast<MemcpyFn>(dlsym(runtime, "cudaMemcpy"));
  ASSERT_NE(memcpy_sync, nullptr);

  constexpr std::size_t kBytes = 64 << 20;
  constexpr int kSlots = 3;
  PinnedBuffer sources[kSlots];
  std::mt19937 rng(9);
  for (auto& s : sources) {
    s = backend.allocate_pinned(kBytes);
    ASSERT_TRUE(s.page_locked);
    for (std::size_t i = 0; i < kBytes; i += 4096) s.data[i] = static_cast<std::byte>(rng());
  }
  EXPECT_EQ(backend.pinned_bytes(), kSlots * kBytes);
  backend.reserve_device_slots(kSlots, kBytes);

  std::uint64_t tickets[kSlots];
  for (int i = 0; i < kSlots; ++i) tickets[i] = backend.copy_async(sources[i], kBytes, i);
  PinnedBuffer readback = backend.allocate_pinned(kBytes);
  for (int i = 0; i < kSlots; ++i) {
    backend.wait(tickets[i]);
    ASSERT_EQ(memcpy_sync(readback.data, backend.device_slot(i), kBytes, kDeviceToHost), 0);
    EXPECT_EQ(std::memcmp(readback.data, sources[i].data, kBytes), 0) << "slot " << i;
  }
  const auto stats = backend.transfer_stats();
  EXPECT_EQ(stats.copies, static_cast<std::uint64_t>(kSlots));
  EXPECT_EQ(stats.bytes, kSlots * kBytes);
  EXPECT_GT(stats.busy_ns, 0u);
  std::printf("%d copies of 64 MiB: %.1f GB/s on the device\n", kSlots,
              static_cast<double>(stats.bytes) / static_cast<double>(stats.busy_ns));
  for (auto& s : sources) backend.free_pinned(s);
  backend.free_pinned(readback);
  EXPECT_EQ(backend.pinned_bytes(), 0u);
  dlclose(runtime);
}

}  // namespace
}  // namespace gpufeed::loader
