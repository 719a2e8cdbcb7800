#include <gtest/gtest.h>

#include "gpufeed/error.hpp"
#include "gpufeed/process_view.hpp"
#include "gpufeed/setting.hpp"

namespace gpufeed {
namespace {

TEST(CgroupParsers, CpuMax) {
  EXPECT_FALSE(parse_cpu_max("max 100000\n", "cpu.max"));
  EXPECT_DOUBLE_EQ(*parse_cpu_max("200000 100000\n", "cpu.max"), 2.0);
  EXPECT_DOUBLE_EQ(*parse_cpu_max("150000 100000", "cpu.max"), 1.5);
  EXPECT_THROW(parse_cpu_max("lots", "cpu.max"), Error);
  EXPECT_THROW(parse_cpu_max("", "cpu.max"), Error);
}

TEST(CgroupParsers, CfsQuota) {
  EXPECT_FALSE(parse_cfs_quota("-1\n", "100000\n", "q"));
  EXPECT_DOUBLE_EQ(*parse_cfs_quota("400000\n", "100000\n", "q"), 4.0);
  EXPECT_THROW(parse_cfs_quota("x", "100000", "q"), Error);
}

TEST(CgroupParsers, MemoryMax) {
  EXPECT_FALSE(parse_memory_max("max\n", "memory.max"));
  EXPECT_EQ(*parse_memory_max("8589934592\n", "memory.max"), 8589934592ULL);
  EXPECT_FALSE(parse_memory_max("9223372036854771712\n", "memory.limit_in_bytes"));  // v1 "unlimited"
  try {
    parse_memory_max("eight gigs", "/sys/fs/cgroup/memory.max");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/sys/fs/cgroup/memory.max"), std::string::npos);
    EXPECT_EQ(e.hint(), "check the file") << "no front end, so no flag to name";
  }
  // probe has the flag: the hint names it.
  SettingSpelling probe([](Setting s) -> std::optional<std::string> {
    return s == Setting::ignore_cgroup ? std::optional<std::string>("--ignore-cgroup") : std::nullopt;
  });
  try {
    parse_memory_max("eight gigs", "/sys/fs/cgroup/memory.max");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.hint().find("pass --ignore-cgroup"), std::string::npos) << e.hint();
  }
}

TEST(ProcParsers, CapEff) {
  const char* status = "Name:\tbash\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
  EXPECT_EQ(parse_cap_eff(status, "status"), 0x1ffffffffffULL);
  Privileges all = privileges_from(0x1ffffffffffULL, 0);
  EXPECT_TRUE(all.root && all.cap_bpf && all.cap_perfmon && all.cap_sys_admin && all.can_trace());
  Privileges bpf_only = privileges_from((1ULL << 39) | (1ULL << 38), 1000);
  EXPECT_FALSE(bpf_only.root);
  EXPECT_TRUE(bpf_only.can_trace());
  EXPECT_FALSE(privileges_from(0, 1000).can_trace());
  EXPECT_THROW(parse_cap_eff("Name: x\n", "status"), Error);
}

TEST(ProcParsers, Mountinfo) {
  const char* text =
      "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
      "41 31 0:38 /kubepods /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
      "50 23 0:50 / /mnt/my\\040data rw - fuse.s3fs s3fs rw,user_id=0\n"
      "garbage line\n";
  auto mounts = parse_mountinfo(text);
  ASSERT_EQ(mounts.size(), 4U);
  EXPECT_EQ(mounts[1].mount_point, "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(mounts[1].options, "rw,cpu,cpuacct");
  EXPECT_EQ(mounts[2].root, "/kubepods");
  EXPECT_EQ(mounts[3].mount_point, "/mnt/my data");
  EXPECT_EQ(mounts[3].fs_type, "fuse.s3fs");
}

TEST(ProcParsers, ProcCgroup) {
  auto m = parse_proc_cgroup("12:cpu,cpuacct:/job\n4:memory:/job\n0::/user.slice/x\n");
  EXPECT_EQ(m.v2_path, "/user.slice/x");
  ASSERT_EQ(m.v1.size(), 3U);
  EXPECT_EQ(m.v1[0], (std::pair<std::string, std::string>{"cpu", "/job"}));
  EXPECT_EQ(m.v1[2].first, "memory");
}

TEST(ProcessView, UsableCpusHonourTheQuota) {
  ProcessView v;
  v.allowed_cpus = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(v.usable_cpus(), 8);
  v.cgroup.cpu_quota_cores = 2.5;
  EXPECT_EQ(v.usable_cpus(), 3);
  v.cgroup.cpu_quota_cores = 0.2;
  EXPECT_EQ(v.usable_cpus(), 1);
}

}  // namespace
}  // namespace gpufeed
