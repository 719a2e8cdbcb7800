#include <gtest/gtest.h>

#include "gpufeed/pci_ids.hpp"

namespace gpufeed {
namespace {

TEST(PciIds, RecognisesDataCentreGpusByVendorAndClass) {
  EXPECT_EQ(classify_pci(kPciVendorAmd, 0x0380), DeviceKind::Gpu);     // MI200: display controller
  EXPECT_EQ(classify_pci(kPciVendorAmd, 0x1200), DeviceKind::Gpu);     // MI300: processing accelerator
  EXPECT_EQ(classify_pci(kPciVendorNvidia, 0x0302), DeviceKind::Gpu);  // H100: 3D controller
  EXPECT_EQ(classify_pci(kPciVendorNvidia, 0x0300), DeviceKind::Gpu);
}

TEST(PciIds, BmcVgaAndGpuAudioAreNotGpus) {
  EXPECT_EQ(classify_pci(0x1a03, 0x0300), DeviceKind::Other);          // ASPEED BMC VGA
  EXPECT_EQ(classify_pci(kPciVendorNvidia, 0x0403), DeviceKind::Other);  // HDMI audio function
  EXPECT_EQ(classify_pci(0x1022, 0x0600), DeviceKind::Other);          // AMD host bridge (vendor 1022, not 1002)
}

TEST(PciIds, ClassifiesNicsAndStorage) {
  EXPECT_EQ(classify_pci(0x15b3, 0x0207), DeviceKind::Nic);  // InfiniBand
  EXPECT_EQ(classify_pci(0x8086, 0x0200), DeviceKind::Nic);  // Ethernet
  EXPECT_EQ(classify_pci(0x144d, 0x0108), DeviceKind::Storage);  // NVMe
}

TEST(PciIds, NamesKnownModelsAndFallsBackToIds) {
  EXPECT_EQ(pci_model_name(kPciVendorAmd, 0x74a1), "AMD Instinct MI300X");
  EXPECT_EQ(pci_model_name(kPciVendorNvidia, 0x2335), "NVIDIA H200");
  EXPECT_EQ(pci_model_name(kPciVendorNvidia, 0x1234), "NVIDIA device 1234");
  EXPECT_EQ(pci_model_name(0x15b3, 0x101b), "Mellanox device 101b");
}

}  // namespace
}  // namespace gpufeed
