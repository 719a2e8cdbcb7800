// Mount lookup (longest prefix, device) and storage classes.
#include <gtest/gtest.h>

#include "syscall_nrs.h"
#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/diagnose/histogram.hpp"
#include "gpufeed/diagnose/mounts.hpp"
#include "gpufeed/diagnose/proc_stats.hpp"
#include "gpufeed/diagnose/syscalls.hpp"

namespace gpufeed {
namespace {

TEST(Mounts, LongestPrefixAndDevice) {
  auto mounts = parse_mountinfo(
      "22 1 254:0 / / rw - ext4 /dev/vda rw\n"
      "30 22 0:45 / /mnt/s3 rw - fuse.s3fs s3fs rw\n"
      "31 22 0:46 /sub /mnt/s3data rw - fuse.latencyfs latencyfs rw\n");
  MountTable t(mounts);
  EXPECT_EQ(t.by_path("/mnt/s3/a/b.jpg")->fs_type, "fuse.s3fs");
  EXPECT_EQ(t.by_path("/mnt/s3data/x")->fs_type, "fuse.latencyfs");  // not /mnt/s3
  EXPECT_EQ(t.by_path("/home/x")->fs_type, "ext4");
  EXPECT_EQ(t.by_kernel_dev((0U << 20) | 45)->mount_point, "/mnt/s3");
  EXPECT_EQ(t.by_kernel_dev((254U << 20) | 0)->mount_point, "/");
  EXPECT_EQ(t.by_kernel_dev(12345), nullptr);
}

TEST(Mounts, StorageClassesAndPaths) {
  EXPECT_EQ(storage_class("fuse.s3fs"), StorageClass::Fuse);
  EXPECT_EQ(storage_class("nfs4"), StorageClass::Network);
  EXPECT_EQ(storage_class("lustre"), StorageClass::Network);
  EXPECT_EQ(storage_class("xfs"), StorageClass::Local);
  EXPECT_EQ(storage_class("overlay"), StorageClass::Overlay);
  EXPECT_TRUE(is_remote_like(StorageClass::Fuse));
  EXPECT_FALSE(is_remote_like(StorageClass::Local));
  EXPECT_EQ(normalise_path("/a/./b/../c//d"), "/a/c/d");
  EXPECT_EQ(group_prefix("/mnt/s3/train/n01/x.jpg", "/mnt/s3"), "/mnt/s3/train/n01");
  EXPECT_EQ(group_prefix("/mnt/s3/x.jpg", "/mnt/s3"), "/mnt/s3");
  EXPECT_EQ(group_prefix("/data/a/b/c/d/x.jpg", "/"), "/data/a");
}

}  // namespace
}  // namespace gpufeed
