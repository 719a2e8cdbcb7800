// A GPU load with a known duty cycle, for scripts/gpu-check.sh: each period
// runs one spinning kernel for BUSY ms, then leaves the GPU idle for the rest.
//   duty_cycle BUSY_MS PERIOD_MS SECONDS
// Prints the measured kernel time per period, so the check compares gpufeed's
// figures with what actually ran.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "duty_cycle: %s: %s\n", #call, cudaGetErrorString(err_)); \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

// Runs one spinning kernel of `cycles`; its GPU time in ms goes to *ms.
static cudaError_t timed_spin(long long cycles, cudaEvent_t a, cudaEvent_t b, float* ms) {
  cudaError_t err = cudaEventRecord(a);
  if (err != cudaSuccess) return err;
  spin<<<1, 1>>>(cycles);
  if ((err = cudaEventRecord(b)) != cudaSuccess) return err;
  if ((err = cudaEventSynchronize(b)) != cudaSuccess) return err;
  return cudaEventElapsedTime(ms, a, b);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: duty_cycle BUSY_MS PERIOD_MS SECONDS\n");
    return 2;
  }
  const double busy_ms = std::atof(argv[1]), period_ms = std::atof(argv[2]), seconds = std::atof(argv[3]);
  int clock_khz = 0;
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  // Calibrate: the SM clock may differ from the attribute under boost.
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  long long cycles = static_cast<long long>(busy_ms * clock_khz);
  for (int i = 0; i < 3; ++i) {
    float ms = 0;
    CHECK(timed_spin(cycles, a, b, &ms));
    if (ms > 0) cycles = static_cast<long long>(cycles * (busy_ms / ms));
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  double kernel_ms = 0;
  int periods = 0;
  while (std::chrono::steady_clock::now() < end) {
    const auto start = std::chrono::steady_clock::now();
    float ms = 0;
    CHECK(timed_spin(cycles, a, b, &ms));
    kernel_ms += ms;
    ++periods;
    std::this_thread::sleep_until(start + std::chrono::duration<double, std::milli>(period_ms));
  }
  std::printf("periods %d kernel_ms_per_period %.1f period_ms %.0f\n", periods, kernel_ms / periods, period_ms);
  return 0;
}
