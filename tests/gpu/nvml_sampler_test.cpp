// The NVML sampler through dlopen() against the fake libnvidia-ml.so.1
// (tests/fixtures/fake_nvml): devices, readings that fail one field at a
// time, buffered samples, processes, entry-point fallbacks, and every way
// of being unavailable without a crash.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "gpufeed/gpu/vendor_samplers.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

using testing::TempDir;

const std::string kFakeNvml = std::string(GPUFEED_FAKE_NVML_DIR) + "/libnvidia-ml.so.1";

constexpr std::string_view kTwoH200 = R"(# two GPUs, the second with failing sensors
init ok
devices 2
device 0 name=NVIDIA H200 bus=00000000:41:00.0 mem_total=150000000000 mem_used=2000000000 power_mw=300000 temp=45
device 1 name=NVIDIA H200 bus=00000000:C1:00.0 mem_total=150000000000 power_mw=unsupported temp=fail
busy 0 30 30 70 70 0
busy 1 100
process 0 4242 1000000000
process 0 4343 na
)";

class NvmlFake : public ::testing::Test {
 protected:
  // Writes `script` and opens the fake library with it.
  GpuOpenResult open(std::string_view script) {
    const auto path = dir_.write("nvml.script", script);
    setenv("GPUFEED_FAKE_NVML", path.c_str(), 1);
    return open_nvml(kFakeNvml);
  }
  void TearDown() override { unsetenv("GPUFEED_FAKE_NVML"); }
  TempDir dir_;
};

TEST_F(NvmlFake, ListsDevicesWithNormalisedBusIds) {
  auto r = open(kTwoH200);
  ASSERT_NE(r.sampler, nullptr) << r.unavailable;
  EXPECT_EQ(r.unavailable, "");
  EXPECT_EQ(r.sampler->backend(), "nvml");
  const auto devices = r.sampler->devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].index, 0);
  EXPECT_EQ(devices[1].index, 1);
  for (const auto& d : devices) {
    EXPECT_EQ(d.vendor, "NVIDIA");
    EXPECT_EQ(d.name, "NVIDIA H200");
    EXPECT_EQ(d.memory_total_bytes, 150000000000u);
  }
  EXPECT_EQ(devices[0].bus_id, "0000:41:00.0");
  EXPECT_EQ(devices[1].bus_id, "0000:c1:00.0");
}

TEST_F(NvmlFake, BusyFollowsTheScriptOverSuccessiveSamples) {
  auto r = open(kTwoH200);
  ASSERT_NE(r.sampler, nullptr) << r.unavailable;
  const double expected0[] = {30, 30, 70, 70, 0, 30};  // cycles
  for (int i = 0; i < 6; ++i) {
    const auto samples = r.sampler->sample(0.5 * i);
    ASSERT_EQ(samples.size(), 2u);
    EXPECT_DOUBLE_EQ(samples[0].t_s, 0.5 * i);
    EXPECT_EQ(samples[0].device, 0);
    EXPECT_EQ(samples[1].device, 1);
    ASSERT_TRUE(samples[0].busy_pct) << "call " << i;
    EXPECT_DOUBLE_EQ(*samples[0].busy_pct, expected0[i]) << "call " << i;
    ASSERT_TRUE(samples[1].busy_pct) << "call " << i;
    EXPECT_DOUBLE_EQ(*samples[1].busy_pct, 100);
  }
}

TEST_F(NvmlFake, FailingReadingsEmptyOnlyTheirFields) {
  auto r = open(kTwoH200);
  ASSERT_NE(r.sampler, nullptr) << r.unavailable;
  const auto samples = r.sampler->sample(1.0);
  ASSERT_EQ(samples.size(), 2u);
  const auto& good = samples[0];
  EXPECT_EQ(good.memory_used_bytes, 2000000000u);
  ASSERT_TRUE(good.power_w);
  EXPECT_DOUBLE_EQ(*good.power_w, 300.0);  // mW → W
  ASSERT_TRUE(good.temperature_c);
  EXPECT_DOUBLE_EQ(*good.temperature_c, 45.0);

  const auto& bad = samples[1];  // power unsupported, temperature failing
  EXPECT_FALSE(bad.power_w);
  EXPECT_FALSE(bad.temperature_c);
  EXPECT_TRUE(bad.busy_pct);
  EXPECT_EQ(bad.memory_used_bytes, 0u);
}

TEST_F(NvmlFake, AMissingReadingEmptiesItsFieldEveryTime) {
  auto r = open(R"(
device 0 name=NVIDIA A100 bus=00000000:07:00.0
busy 0 10 unsupported 20 fail
)");
  ASSERT_NE(r.sampler, nullptr) << r.unavailable;
  const auto devices = r.sampler->devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_FALSE(devices[0].memory_total_bytes);
  const std::optional<double> expected[] = {10, std::nullopt, 20, std::nullopt};
  for (const auto& e : expected) {
    const auto s = r.sampler->sample(0);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].busy_pct, e);
    EXPECT_FALSE(s[0].memory_used_bytes);
    EXPECT_FALSE(s[0].power_w);
    EXPECT_FALSE(s[0].temperature_c);
  }
}

TEST_F(NvmlFake, ListsComputeProcesses) {
  auto r = open(kTwoH200);
  ASSERT_NE(r.sampler, nullptr) << r.unavailable;
  const auto procs = r.sampler->processes(0);
  ASSERT_EQ(procs.size(), 2u);
  EXPECT_EQ(procs[0].pid, 4242);
  EXPECT_EQ(procs[0].memory_bytes, 1000000000u);
  EXPECT_EQ(procs[1].pid, 4343);
  EXPECT_FALSE(procs[1].memory_bytes);  // NVML_VALUE_NOT_AVAILABLE
  EXPECT_TRUE(r.sampler->processes(1).empty());
  EXPECT_TRUE(r.sampler->processes(7).empty());  // no such device
}

TEST_F(NvmlFake, OlderDriverEntryPointsAreUsedWhenNewerOnesAreMissing) {
  std::string script(kTwoH200);
  script +=
      "missing nvmlDeviceGetComputeRunningProcesses_v3 nvmlDeviceGetComputeRunningProcesses_v2 "
      "nvmlDeviceGetPciInfo_v3\n";
  auto r = open(script);
  ASSERT_NE(r.sampler, nullptr) << r.unavailable;
  EXPECT_EQ(r.sampler->devices()[1].bus_id, "0000:c1:00.0");  // from _v2
  const auto procs = r.sampler->processes(0);                  // legacy 16-byte records
  ASSERT_EQ(procs.size(), 2u);
  EXPECT_EQ(procs[0].pid, 4242);
  EXPECT_EQ(procs[0].memory_bytes, 1000000000u);
  EXPECT_EQ(procs[1].pid, 4343);
  EXPECT_FALSE(procs[1].memory_bytes);
}

TEST_F(NvmlFake, ManyProcessesAreReadInFull) {
  std::string script = "device 0 name=NVIDIA H100\n";
  for (int pid = 100; pid < 130; ++pid) script += "process 0 " + std::to_string(pid) + " 4096\n";
  auto r = open(script);
  ASSERT_NE(r.sampler, nullptr) << r.unavailable;
  const auto procs = r.sampler->processes(0);
  ASSERT_EQ(procs.size(), 30u);  // more than the first buffer holds
  EXPECT_EQ(procs.back().pid, 129);
}

TEST_F(NvmlFake, BufferedBusyReturnsOnlyNewSamplesOnOurClock) {
  auto r = open(R"(
devices 3
device 0 name=NVIDIA H200
device 1 name=NVIDIA H200
device 2 name=NVIDIA H200
# batch 0 is there from the start; batch 1 appears after one read
samples 0 1000000:10 1100000:20 1200000:30
samples 0 1200000:30 1300000:40 1400000:50
samples 1 1250000:77
samples 2 unsupported
)");
  ASSERT_NE(r.sampler, nullptr) << r.unavailable;
  // The newest sample of the first read is "now" (t = 5): older ones before it.
  auto first = r.sampler->buffered_busy(0, 5.0);
  ASSERT_EQ(first.size(), 3u);
  const double t0[] = {4.8, 4.9, 5.0}, v0[] = {10, 20, 30};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(first[i].device, 0);
    EXPECT_NEAR(first[i].t_s, t0[i], 1e-9);
    ASSERT_TRUE(first[i].busy_pct);
    EXPECT_DOUBLE_EQ(*first[i].busy_pct, v0[i]);
  }
  // Only what is newer than the last sample seen, on the same clock.
  auto second = r.sampler->buffered_busy(0, 5.3);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_NEAR(second[0].t_s, 5.1, 1e-9);
  EXPECT_DOUBLE_EQ(*second[0].busy_pct, 40);
  EXPECT_NEAR(second[1].t_s, 5.2, 1e-9);
  EXPECT_TRUE(r.sampler->buffered_busy(0, 6.0).empty());
  // Another device shares the driver's clock and our anchor.
  auto other = r.sampler->buffered_busy(1, 6.0);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].device, 1);
  EXPECT_NEAR(other[0].t_s, 5.05, 1e-9);
  EXPECT_TRUE(r.sampler->buffered_busy(2, 6.0).empty());  // unsupported
  EXPECT_TRUE(r.sampler->buffered_busy(9, 6.0).empty());  // no such device
}

TEST_F(NvmlFake, BufferedBusyIsEmptyWithoutSamples) {
  auto r = open(kTwoH200);
  ASSERT_NE(r.sampler, nullptr) << r.unavailable;
  EXPECT_TRUE(r.sampler->buffered_busy(0, 1.0).empty());
}

TEST_F(NvmlFake, InitFailureNamesNvmlsError) {
  auto r = open("init fail 9\ndevice 0 name=NVIDIA H200\n");
  EXPECT_EQ(r.sampler, nullptr);
  EXPECT_NE(r.unavailable.find("nvmlInit_v2"), std::string::npos) << r.unavailable;
  EXPECT_NE(r.unavailable.find("Driver Not Loaded"), std::string::npos) << r.unavailable;
  EXPECT_EQ(r.unavailable.find('\n'), std::string::npos) << r.unavailable;
}

TEST_F(NvmlFake, NoDevicesIsUnavailable) {
  auto r = open("init ok\ndevices 0\n");
  EXPECT_EQ(r.sampler, nullptr);
  EXPECT_EQ(r.unavailable.rfind("no NVIDIA GPU found", 0), 0u) << r.unavailable;
}

TEST_F(NvmlFake, AGpuWithoutAHandleIsLeftOutAndTheOthersKeepTheirIndex) {
  auto r = open(R"(
device 0 name=NVIDIA H200 handle=error:4
device 1 name=NVIDIA H200 bus=00000000:C1:00.0
busy 1 55
)");
  ASSERT_NE(r.sampler, nullptr) << r.unavailable;
  const auto devices = r.sampler->devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].index, 1);
  const auto s = r.sampler->sample(0);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].device, 1);
  EXPECT_EQ(s[0].busy_pct, 55);
  r.sampler.reset();  // NVML is per process: the next script is read at the next first init

  auto none = open("device 0 name=NVIDIA H200 handle=error:15\n");
  EXPECT_EQ(none.sampler, nullptr);
  EXPECT_NE(none.unavailable.find("GPU is lost"), std::string::npos) << none.unavailable;
}

TEST_F(NvmlFake, ClosingShutsNvmlDownAndReopeningRereadsTheScript) {
  // Keep the fake loaded between samplers so its state would survive.
  void* fake = dlopen(kFakeNvml.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fake, nullptr) << dlerror();
  auto shutdown = reinterpret_cast<int (*)()>(dlsym(fake, "nvmlShutdown"));
  ASSERT_NE(shutdown, nullptr);

  auto one = open("device 0 name=First GPU\n");
  ASSERT_NE(one.sampler, nullptr) << one.unavailable;
  EXPECT_EQ(one.sampler->devices().at(0).name, "First GPU");
  one.sampler.reset();
  EXPECT_EQ(shutdown(), 1) << "NVML_ERROR_UNINITIALIZED: the sampler already shut NVML down";

  auto two = open("device 0 name=Second GPU\ndevice 1 name=Third GPU\n");
  ASSERT_NE(two.sampler, nullptr) << two.unavailable;
  ASSERT_EQ(two.sampler->devices().size(), 2u);
  EXPECT_EQ(two.sampler->devices()[0].name, "Second GPU");
  two.sampler.reset();
  dlclose(fake);
}

TEST_F(NvmlFake, AMissingLibraryIsUnavailable) {
  const auto missing = (dir_ / "libnvidia-ml.so.1").string();
  auto r = open_nvml(missing);
  EXPECT_EQ(r.sampler, nullptr);
  EXPECT_EQ(r.unavailable.rfind("NVML not found (", 0), 0u) << r.unavailable;
  EXPECT_NE(r.unavailable.find(missing), std::string::npos) << r.unavailable;
  EXPECT_EQ(r.unavailable.find('\n'), std::string::npos) << r.unavailable;
}

TEST_F(NvmlFake, ALibraryThatIsNotNvmlIsUnavailable) {
  auto r = open_nvml("libm.so.6");
  EXPECT_EQ(r.sampler, nullptr);
  EXPECT_NE(r.unavailable.find("lacks nvmlInit_v2"), std::string::npos) << r.unavailable;
}

TEST(NvmlBusId, BecomesLowerCaseWithAFourDigitDomain) {
  EXPECT_EQ(normalize_nvml_bus_id("00000000:41:00.0"), "0000:41:00.0");
  EXPECT_EQ(normalize_nvml_bus_id("00000000:C1:00.0"), "0000:c1:00.0");
  EXPECT_EQ(normalize_nvml_bus_id("0000:C1:1F.7"), "0000:c1:1f.7");
  EXPECT_EQ(normalize_nvml_bus_id("00010000:05:00.1"), "10000:05:00.1");  // as Linux names it
  EXPECT_EQ(normalize_nvml_bus_id(std::string_view("00000000:41:00.0\0\0", 18)), "0000:41:00.0");
  EXPECT_EQ(normalize_nvml_bus_id("GPU-Not-A-Bus-Id"), "gpu-not-a-bus-id");
}

}  // namespace
}  // namespace gpufeed
