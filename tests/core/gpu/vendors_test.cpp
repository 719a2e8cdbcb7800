// The vendor table is the one place each vendor's ids and names live: every
// lookup must find the same entry, and the phrases built from it must read.
#include <gtest/gtest.h>

#include <set>

#include "gpufeed/gpu/vendors.hpp"
#include "gpufeed/pci_ids.hpp"

namespace gpufeed {
namespace {

TEST(GpuVendors, EveryLookupFindsTheSameEntry) {
  for (const auto& v : gpu_vendors()) {
    EXPECT_EQ(vendor_by_id(v.id), &v) << v.id;
    EXPECT_EQ(vendor_by_pci(v.pci_vendor), &v) << v.id;
    EXPECT_EQ(vendor_by_name(v.name), &v) << v.id;
    EXPECT_EQ(vendor_by_sampler(v.sampler), &v) << v.id;
    EXPECT_EQ(vendor_by_runtime(v.runtime_backend), &v) << v.id;
    EXPECT_FALSE(v.monitoring.sonames.empty()) << v.id;
    EXPECT_FALSE(v.runtime.sonames.empty()) << v.id;
  }
  EXPECT_EQ(vendor_by_id("intel"), nullptr);
  EXPECT_EQ(vendor_by_pci(0x8086), nullptr);
  EXPECT_EQ(vendor_by_sampler("none"), nullptr);
  EXPECT_EQ(vendor_by_runtime("host"), nullptr);
}

TEST(GpuVendors, PciIdsClassifyEveryVendorsDisplayControllerAsAGpu) {
  for (const auto& v : gpu_vendors()) {
    EXPECT_EQ(classify_pci(v.pci_vendor, 0x0302), DeviceKind::Gpu) << v.id;
  }
  EXPECT_EQ(vendor_by_pci(kPciVendorNvidia)->id, "nvidia");
  EXPECT_EQ(vendor_by_pci(kPciVendorAmd)->id, "amd");
}

TEST(GpuVendors, IdsSamplersAndRuntimesAreUnique) {
  std::set<std::string_view> ids, samplers, runtimes;
  for (const auto& v : gpu_vendors()) {
    EXPECT_TRUE(ids.insert(v.id).second) << v.id;
    EXPECT_TRUE(samplers.insert(v.sampler).second) << v.sampler;
    EXPECT_TRUE(runtimes.insert(v.runtime_backend).second) << v.runtime_backend;
  }
  auto by_id = gpu_vendors_by_id();
  ASSERT_EQ(by_id.size(), gpu_vendors().size());
  for (std::size_t i = 1; i < by_id.size(); ++i) EXPECT_LT(by_id[i - 1]->id, by_id[i]->id);
}

TEST(GpuVendors, CudaVisibleDevicesIsReadFirst) {
  auto vars = visible_devices_vars();
  ASSERT_GE(vars.size(), 3u);
  EXPECT_EQ(vars.front(), "CUDA_VISIBLE_DEVICES");
}

TEST(GpuVendors, AJobsVisibleDevicesComeFromItsEnvironment) {
  using namespace std::string_literals;
  auto v = visible_devices_in_environ("PATH=/bin\0HIP_VISIBLE_DEVICES=3\0CUDA_VISIBLE_DEVICES=0,2\0"s);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->devices, (std::vector<int>{0, 2})) << "CUDA's variable is read first";
  EXPECT_EQ(v->variable, "CUDA_VISIBLE_DEVICES");
  v = visible_devices_in_environ("CUDA_VISIBLE_DEVICES=GPU-8d3c1c2e\0ROCR_VISIBLE_DEVICES=1"s);
  ASSERT_TRUE(v) << "a UUID says nothing of indices: the next variable tells";
  EXPECT_EQ(v->devices, std::vector<int>{1});
  EXPECT_EQ(v->variable, "ROCR_VISIBLE_DEVICES");
  v = visible_devices_in_environ("CUDA_VISIBLE_DEVICES=1\0CUDA_VISIBLE_DEVICES=0\0"s);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->devices, std::vector<int>{1}) << "the first assignment is getenv()'s";
  EXPECT_FALSE(visible_devices_in_environ("PATH=/bin\0XCUDA_VISIBLE_DEVICES=1"s));
  EXPECT_FALSE(visible_devices_in_environ(""));
}

TEST(GpuVendors, SamplerChoicesReadAsAPhrase) {
  EXPECT_EQ(sampler_choices_text(true), "auto, nvml, rocm-smi or none");
  EXPECT_EQ(sampler_choices_text(false), "auto, nvml or rocm-smi");
  EXPECT_EQ(sampler_choices_text(true, true), "auto (NVML, then rocm-smi), nvml, rocm-smi or none");
  EXPECT_EQ(join_names({"a"}, " or "), "a");
  EXPECT_EQ(join_names({"a", "b"}, " and "), "a and b");
  EXPECT_EQ(join_names({}, " or "), "");
}

}  // namespace
}  // namespace gpufeed
