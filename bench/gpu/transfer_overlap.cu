// gpufeed's CUDA backend on a real GPU, for scripts/gpu-check.sh:
//   (a) page-locked host-to-device bandwidth through the backend (its own
//       non-blocking stream, one event pair per copy) against the classic
//       bandwidth test (cudaMemcpyAsync from cudaHostAlloc memory on the
//       default stream, timed by events); target: ratio >= 0.9;
//   (b) a copy overlapping a running kernel (the "step"): a spinning kernel
//       on the legacy default stream, then a batch copied through the
//       backend; the copy must finish while the kernel still runs. As a
//       control, the same copy issued on the default stream waits for the
//       kernel (serial), which shows what no overlap looks like.
//   transfer_overlap [MIB=512] [REPS=9]
// Prints one line per check with PASS/FAIL; exits 0 when both pass.
// Built with nvcc -cudart shared against libgpufeed_device.a, so gpufeed's
// dlopen() of libcudart.so.13 finds the runtime this program already uses.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpufeed/error.hpp"
#include "gpufeed/loader/device_backend.hpp"
#include "gpufeed/device/open_backend.hpp"

#define CHECK(call)                                                                         \
  do {                                                                                      \
    cudaError_t err_ = (call);                                                              \
    if (err_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "transfer_overlap: %s: %s\n", #call, cudaGetErrorString(err_));  \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

// Spins for `ns` nanoseconds of the GPU's global timer: a step of known
// length without calibrating clock rates.
__global__ void spin_ns(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

using Clock = std::chrono::steady_clock;

static double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 512;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 9;
  if (mib == 0 || reps <= 0) {
    std::fprintf(stderr, "usage: transfer_overlap [MIB] [REPS]\n");
    return 2;
  }
  const std::size_t bytes = mib << 20;
  CHECK(cudaSetDevice(0));

  std::unique_ptr<gpufeed::loader::DeviceBackend> backend;
  std::string why;
  try {
    backend = gpufeed::loader::open_device_backend(gpufeed::loader::DeviceChoice::Cuda, why);
  } catch (const gpufeed::Error& e) {
    std::fprintf(stderr, "transfer_overlap: %s (%s)\n", e.what(), e.hint().c_str());
    return 1;
  }
  std::printf("backend: %s\n", why.c_str());
  gpufeed::loader::PinnedBuffer batch = backend->allocate_pinned(bytes);
  std::memset(batch.data, 7, bytes);
  backend->reserve_device_slots(1, bytes);

  // The classic bandwidth test's buffers.
  void* host = nullptr;
  void* device = nullptr;
  CHECK(cudaHostAlloc(&host, bytes, cudaHostAllocDefault));
  CHECK(cudaMalloc(&device, bytes));
  std::memset(host, 7, bytes);
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));

  // (a) Bandwidth, both timed on the device; runs alternate.
  const auto raw_copy_ms = [&] {
    CHECK(cudaEventRecord(a, 0));
    CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, 0));
    CHECK(cudaEventRecord(b, 0));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    return static_cast<double>(ms);
  };
  const auto backend_copy_ms = [&] {
    const auto busy_before = backend->transfer_stats().busy_ns;
    backend->wait(backend->copy_async(batch, bytes, 0));
    return static_cast<double>(backend->transfer_stats().busy_ns - busy_before) / 1e6;
  };
  raw_copy_ms();  // warm-up
  backend_copy_ms();
  std::vector<double> raw_ms, backend_ms;
  for (int r = 0; r < reps; ++r) {
    raw_ms.push_back(raw_copy_ms());
    backend_ms.push_back(backend_copy_ms());
  }
  const double raw_gbps = static_cast<double>(bytes) / median(raw_ms) / 1e6;
  const double backend_gbps = static_cast<double>(bytes) / median(backend_ms) / 1e6;
  const double ratio = backend_gbps / raw_gbps;
  const bool bandwidth_ok = ratio >= 0.9;
  std::printf("bandwidth mib=%zu raw_gbps=%.2f gpufeed_gbps=%.2f ratio=%.3f verdict=%s\n", mib, raw_gbps,
              backend_gbps, ratio, bandwidth_ok ? "PASS" : "FAIL");

  // (b) Overlap. The step lasts four copies' time (at least 20 ms).
  const double copy_ms = median(backend_ms);
  const double step_ms = std::max(20.0, 4 * copy_ms);
  const auto step_ns = static_cast<unsigned long long>(step_ms * 1e6);
  std::vector<double> done_ms, serial_done_ms, kernel_ms;
  for (int r = 0; r < reps; ++r) {
    CHECK(cudaDeviceSynchronize());
    auto t0 = Clock::now();
    CHECK(cudaEventRecord(a, 0));
    spin_ns<<<1, 1>>>(step_ns);  // legacy default stream, as a naive training loop
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(b, 0));
    backend->wait(backend->copy_async(batch, bytes, 0));
    done_ms.push_back(ms_since(t0));
    CHECK(cudaEventSynchronize(b));
    float k = 0;
    CHECK(cudaEventElapsedTime(&k, a, b));
    kernel_ms.push_back(k);

    // Control: the same copy on the default stream queues behind the kernel.
    CHECK(cudaDeviceSynchronize());
    t0 = Clock::now();
    spin_ns<<<1, 1>>>(step_ns);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, 0));
    CHECK(cudaStreamSynchronize(0));
    serial_done_ms.push_back(ms_since(t0));
  }
  const double kernel = median(kernel_ms), done = median(done_ms), serial = median(serial_done_ms);
  // Overlapped: the copy is done about copy_ms after the launch, long
  // before the step ends. Serial would be kernel + copy_ms.
  const bool overlap_ok = done < kernel;
  std::printf("overlap step_ms=%.1f copy_ms=%.1f copy_done_ms=%.1f serial_copy_done_ms=%.1f verdict=%s\n", kernel,
              copy_ms, done, serial, overlap_ok ? "PASS" : "FAIL");

  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  CHECK(cudaFree(device));
  CHECK(cudaFreeHost(host));
  backend->free_pinned(batch);
  return bandwidth_ok && overlap_ok ? 0 : 1;
}
