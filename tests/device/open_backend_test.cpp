// open_device_backend(): auto takes the first runtime with a device (CUDA,
// then HIP) and otherwise the host, saying why; an explicit cuda/hip that
// cannot work is an error naming the library and the cause. Runtimes are
// chosen with GPUFEED_CUDART_LIBRARY / GPUFEED_HIP_LIBRARY (the fakes of
// tests/fixtures/fake_gpu_runtime, or a path that does not exist).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "gpufeed/error.hpp"
#include "gpufeed/device/device_gpu.hpp"
#include "gpufeed/device/open_backend.hpp"

#include "support/scoped_env.hpp"

namespace gpufeed::loader {
namespace {

using testing::ScopedEnv;

constexpr const char* kMissingHip = "/nonexistent/libamdhip64.so.5";
constexpr const char* kMissingCuda = "/nonexistent/libcudart.so.13";

TEST(DeviceChoice, AutoFallsBackToHostAndSaysWhyForEachRuntime) {
  ScopedEnv cuda("GPUFEED_CUDART_LIBRARY", GPUFEED_FAKE_CUDART);
  ScopedEnv hip("GPUFEED_HIP_LIBRARY", kMissingHip);
  ScopedEnv mode("GPUFEED_FAKE_GPU_RUNTIME", "no-driver");
  std::string why;
  auto backend = open_device_backend(DeviceChoice::Auto, why);
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->name(), "host");
  EXPECT_EQ(why.rfind("auto: CUDA: no device: cudaGetDeviceCount returned 35 (cudaErrorInsufficientDriver", 0), 0u)
      << why;
  EXPECT_NE(why.find(std::string("in ") + GPUFEED_FAKE_CUDART), std::string::npos) << why;
  EXPECT_NE(why.find(std::string("; HIP: ") + kMissingHip), std::string::npos) << why;
  EXPECT_EQ(why.substr(why.size() - 12), "; using host") << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
}

TEST(DeviceChoice, AutoOnThisMachine) {
  ScopedEnv cuda("GPUFEED_CUDART_LIBRARY", nullptr);
  ScopedEnv hip("GPUFEED_HIP_LIBRARY", nullptr);
  std::string why;
  auto backend = open_device_backend(DeviceChoice::Auto, why);
  ASSERT_NE(backend, nullptr);
  std::printf("auto chose %s: %s\n", backend->name().c_str(), why.c_str());
  if (backend->name() != "host") GTEST_SKIP() << "this machine has a GPU: " << why;
  EXPECT_EQ(why.rfind("auto: CUDA: ", 0), 0u) << why;
  EXPECT_NE(why.find("; HIP: "), std::string::npos) << why;
  EXPECT_EQ(why.substr(why.size() - 12), "; using host") << why;
  // Asked for explicitly, the same runtimes are errors.
  EXPECT_THROW(open_device_backend(DeviceChoice::Cuda, why), Error);
  EXPECT_THROW(open_device_backend(DeviceChoice::Hip, why), Error);
}

TEST(DeviceChoice, AutoTakesCudaWhenItHasADevice) {
  ScopedEnv cuda("GPUFEED_CUDART_LIBRARY", GPUFEED_FAKE_CUDART);
  ScopedEnv mode("GPUFEED_FAKE_GPU_RUNTIME", nullptr);
  std::string why;
  auto backend = open_device_backend(DeviceChoice::Auto, why);
  EXPECT_EQ(backend->name(), "cuda");
  EXPECT_EQ(why.rfind("auto: using cuda (Fake NVIDIA GPU, CUDA runtime 13.0", 0), 0u) << why;
}

TEST(DeviceChoice, AutoTakesHipWhenCudaIsMissing) {
  ScopedEnv cuda("GPUFEED_CUDART_LIBRARY", kMissingCuda);
  ScopedEnv hip("GPUFEED_HIP_LIBRARY", GPUFEED_FAKE_HIP);
  ScopedEnv mode("GPUFEED_FAKE_GPU_RUNTIME", nullptr);
  std::string why;
  auto backend = open_device_backend(DeviceChoice::Auto, why);
  EXPECT_EQ(backend->name(), "hip");
  EXPECT_EQ(why.rfind(std::string("auto: CUDA: ") + kMissingCuda, 0), 0u) << why;
  EXPECT_NE(why.find("; using hip (Fake AMD GPU, HIP runtime 5.2"), std::string::npos) << why;
}

TEST(DeviceChoice, ExplicitRuntimeThatCannotWorkIsAnError) {
  ScopedEnv cuda("GPUFEED_CUDART_LIBRARY", GPUFEED_FAKE_CUDART);
  ScopedEnv hip("GPUFEED_HIP_LIBRARY", kMissingHip);
  ScopedEnv mode("GPUFEED_FAKE_GPU_RUNTIME", "no-device");
  std::string why;
  try {
    open_device_backend(DeviceChoice::Cuda, why);
    ADD_FAILURE() << "explicit cuda without a device did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("CUDA backend unavailable: no device: cudaGetDeviceCount returned 100", 0), 0u)
        << message;
    EXPECT_NE(message.find(GPUFEED_FAKE_CUDART), std::string::npos) << message;
    EXPECT_NE(e.hint().find("--device host"), std::string::npos) << e.hint();
  }
  try {
    open_device_backend(DeviceChoice::Hip, why);
    ADD_FAILURE() << "explicit hip without a runtime did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(kMissingHip), std::string::npos) << e.what();
  }
}

TEST(DeviceChoice, ExplicitChoicesSayWhatWasAskedFor) {
  ScopedEnv cuda("GPUFEED_CUDART_LIBRARY", GPUFEED_FAKE_CUDART);
  ScopedEnv mode("GPUFEED_FAKE_GPU_RUNTIME", nullptr);
  std::string why;
  EXPECT_EQ(open_device_backend(DeviceChoice::Host, why)->name(), "host");
  EXPECT_EQ(why, "host (asked for)");
  EXPECT_EQ(open_device_backend(DeviceChoice::Cpu, why)->name(), "cpu");
  EXPECT_EQ(why, "cpu (asked for): no transfer");
  EXPECT_EQ(open_device_backend(DeviceChoice::Cuda, why)->name(), "cuda");
  EXPECT_EQ(why.rfind("cuda (asked for): Fake NVIDIA GPU", 0), 0u) << why;
}

TEST(DeviceChoice, RuntimeCandidatesHonourTheOverride) {
  {
    ScopedEnv cuda("GPUFEED_CUDART_LIBRARY", nullptr);
    ScopedEnv hip("GPUFEED_HIP_LIBRARY", nullptr);
    EXPECT_EQ(cuda_runtime_candidates(),
              (std::vector<std::string>{"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"}));
    EXPECT_EQ(hip_runtime_candidates(),
              (std::vector<std::string>{"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"}));
  }
  ScopedEnv cuda("GPUFEED_CUDART_LIBRARY", "/opt/cuda/libcudart.so.12");
  EXPECT_EQ(cuda_runtime_candidates(), (std::vector<std::string>{"/opt/cuda/libcudart.so.12"}));
}

}  // namespace
}  // namespace gpufeed::loader
