// GPU sampling end to end through the real binary: the real NVML code path
// against the scripted fake libnvidia-ml.so.1 (GPUFEED_NVML_LIBRARY), and the
// real rocm-smi library on this GPU-less machine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "gpufeed/gpu/trace.hpp"
#include "support/child_process.hpp"
#include "support/python_fixtures.hpp"
#include "support/cli_runner.hpp"
#include "support/schema_validator.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

// Two H200s: device 0 busy 30% of the time (3 of 10 samples), device 1 always busy.
const char* kScript =
    "device 0 name=NVIDIA H200 bus=00000000:41:00.0 mem_total=150000000000 mem_used=1000 power_mw=300000 temp=45\n"
    "device 1 name=NVIDIA H200 bus=00000000:C1:00.0 mem_total=150000000000 power_mw=unsupported temp=fail\n"
    "busy 0 100 100 100 0 0 0 0 0 0 0\n"
    "busy 1 100\n";


class GpuCli : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("GPUFEED_NVML_LIBRARY", (std::string(GPUFEED_FAKE_NVML_DIR) + "/libnvidia-ml.so.1").c_str(), 1);
    setenv("GPUFEED_FAKE_NVML", dir_.write("nvml.script", kScript).c_str(), 1);
  }
  void TearDown() override {
    unsetenv("GPUFEED_NVML_LIBRARY");
    unsetenv("GPUFEED_FAKE_NVML");
    unsetenv("CUDA_VISIBLE_DEVICES");
  }
  testing::TempDir dir_;
};

TEST_F(GpuCli, ProbeNamesGpusFromTheVendorLibrary) {
  auto r = testing::run_binary("probe --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(testing::schema_errors("probe", doc), "");
  ASSERT_EQ(doc["topology"]["gpus"].size(), 2U);
  const auto& gpu = doc["topology"]["gpus"][0];
  EXPECT_EQ(gpu["bus_id"], "0000:41:00.0");
  EXPECT_EQ(gpu["model"], "NVIDIA H200");
  EXPECT_EQ(gpu["model_source"], "nvml");
  EXPECT_EQ(gpu["memory_bytes"], 150000000000ULL);
  EXPECT_EQ(doc["budget"]["ranks"].size(), 2U);
}

TEST_F(GpuCli, RecordWritesATraceThatReadsBack) {
  const auto out = dir_ / "node.gputrace";
  auto r = testing::run_binary("gpu record --out " + out.string() + " --duration 1 --hz 20");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Recorded"), std::string::npos);
  GpuTrace t = read_gpu_trace(testing::read_file(out), out.string());
  EXPECT_EQ(t.backend, "nvml");
  ASSERT_EQ(t.devices.size(), 2U);
  EXPECT_EQ(t.devices[1].bus_id, "0000:c1:00.0");
  size_t dev0 = 0, dev1_power = 0;
  for (const auto& s : t.samples) {
    dev0 += s.device == 0;
    if (s.device == 1 && s.power_w) ++dev1_power;
    if (s.device == 1) {
      EXPECT_EQ(s.busy_pct, 100.0);  // failed power/temperature leave busy intact
    }
  }
  EXPECT_GE(dev0, 10U);
  EXPECT_EQ(dev1_power, 0U);

  auto show = testing::run_binary("gpu show " + out.string() + " --json -");
  ASSERT_EQ(show.code, 0) << show.err;
  auto doc = nlohmann::json::parse(show.out);
  EXPECT_EQ(testing::schema_errors("gpushow", doc), "");
  EXPECT_NEAR(doc["devices"][0]["busy_fraction"].get<double>(), 0.3, 0.1);  // 3 of 10 scripted readings
  EXPECT_DOUBLE_EQ(doc["devices"][1]["busy_fraction"].get<double>(), 1.0);
  EXPECT_EQ(doc["devices"][1]["energy_j"], nullptr);  // its power readings all failed
}

TEST_F(GpuCli, DiagnoseFindsTheStarvedGpuLiveAndFromARecording) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  setenv("CUDA_VISIBLE_DEVICES", "0", 1);  // the job uses device 0, the 30%-busy one
  auto live = testing::run_binary("diagnose --no-ebpf --quiet --gpu-hz 20 --duration 10 --json " +
                                  (dir_ / "live.json").string() + " -- " + testing::demo_job_command(3));
  ASSERT_EQ(live.code, 0) << live.err;
  auto doc = nlohmann::json::parse(testing::read_file(dir_ / "live.json"));
  EXPECT_EQ(testing::schema_errors("diagnosis", doc), "");
  ASSERT_TRUE(doc["evidence"]["gpu"].is_object());
  EXPECT_EQ(doc["evidence"]["gpu"]["backend"], "nvml");
  EXPECT_EQ(doc["evidence"]["gpu"]["job_devices_from"], "CUDA_VISIBLE_DEVICES");
  ASSERT_EQ(doc["evidence"]["gpu"]["devices"].size(), 1U);
  EXPECT_NEAR(doc["evidence"]["gpu"]["devices"][0]["busy_fraction"].get<double>(), 0.3, 0.1);
  bool starved_gpu = false;
  for (const auto& f : doc["findings"]) starved_gpu |= f["id"] == "gpu.starved";
  EXPECT_TRUE(starved_gpu) << doc["findings"].dump(2);

  // Record on "the node", analyse with the recording.
  const auto rec = dir_ / "node.gputrace";
  ASSERT_EQ(testing::run_binary("gpu record --quiet --out " + rec.string() + " --duration 2 --hz 20").code, 0);
  unsetenv("GPUFEED_NVML_LIBRARY");
  auto replay = testing::run_binary("diagnose --no-ebpf --quiet --duration 10 --gpu-trace " + rec.string() +
                                    " --json " + (dir_ / "replay.json").string() + " -- " + testing::demo_job_command(3));
  ASSERT_EQ(replay.code, 0) << replay.err;
  auto rdoc = nlohmann::json::parse(testing::read_file(dir_ / "replay.json"));
  EXPECT_EQ(rdoc["evidence"]["gpu"]["source"], rec.string());
  EXPECT_EQ(rdoc["evidence"]["gpu"]["devices"][0]["bus_id"], "0000:41:00.0");
}

TEST_F(GpuCli, BadGpuTraceIsAUsageError) {
  const auto bad = dir_.write("bad.gputrace", "hello\n");
  auto r = testing::run_binary("diagnose --no-ebpf --duration 1 --gpu-trace " + bad.string() + " -- /bin/true");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.gputrace line 1"), std::string::npos) << r.err;
  r = testing::run_binary("diagnose --no-ebpf --duration 1 --gpu bogus -- /bin/true");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--gpu bogus is not known"), std::string::npos) << r.err;
}

TEST(GpuCliWithoutGpu, RecordSaysWhyAndExitsOne) {
  unsetenv("GPUFEED_NVML_LIBRARY");
  testing::TempDir dir;
  auto r = testing::run_binary("gpu record --out " + (dir / "x.gputrace").string() + " --duration 1");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // no rocm-smi noise
  EXPECT_NE(r.err.find("no GPU sampler available"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "x.gputrace"));
}

}  // namespace
}  // namespace gpufeed
