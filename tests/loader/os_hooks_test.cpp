// The OS facts the loader's hooks read, on staged /proc and /sys trees.
#include <gtest/gtest.h>

#include "gpufeed/loader/os_hooks.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed::loader {
namespace {

using testing::TempDir;

void stage_kernel(const TempDir& root, int threads_max, int pid_max, int running) {
  root.write("proc/sys/kernel/threads-max", std::to_string(threads_max) + "\n");
  root.write("proc/sys/kernel/pid_max", std::to_string(pid_max) + "\n");
  root.write("proc/loadavg", "0.10 0.20 0.30 2/" + std::to_string(running) + " 4242\n");
}

// /proc/self/cgroup as `membership` says, and pids.max / pids.current in `dir`.
void stage_pids_cgroup(const TempDir& root, const std::string& membership, const std::string& dir, int max, int current) {
  stage_kernel(root, 100000, 32768, 900);
  root.write("proc/self/cgroup", membership);
  root.write(dir + "/pids.max", std::to_string(max) + "\n");
  root.write(dir + "/pids.current", std::to_string(current) + "\n");
}

TEST(ThreadHeadroom, TheKernelsLimitsLessWhatRuns) {
  TempDir root;
  stage_kernel(root, 1000, 32768, 900);
  const ThreadHeadroom h = thread_headroom(root.path());
  EXPECT_EQ(h.threads, 100U);
  EXPECT_EQ(h.limit, "kernel.threads-max");
}

TEST(ThreadHeadroom, ACgroupV2PidsMaxBindsFirst) {
  TempDir root;
  stage_pids_cgroup(root, "0::/job.slice/train\n", "sys/fs/cgroup/job.slice/train", 100, 40);
  const ThreadHeadroom h = thread_headroom(root.path());
  EXPECT_EQ(h.threads, 60U);
  EXPECT_EQ(h.limit, "the cgroup's pids.max");
}

TEST(ThreadHeadroom, ACgroupV1PidsHierarchyCountsToo) {
  TempDir root;
  stage_pids_cgroup(root, "9:name=systemd:/\n8:pids:/slurm/job42\n4:memory:/slurm/job42\n0::/\n",
                    "sys/fs/cgroup/pids/slurm/job42", 64, 60);
  EXPECT_EQ(thread_headroom(root.path()).threads, 4U);
}

TEST(ThreadHeadroom, MaxMeansNoLimitAndNothingStagedMeansNone) {
  TempDir root;
  root.write("proc/self/cgroup", "0::/\n");
  root.write("sys/fs/cgroup/pids.max", "max\n");
  const ThreadHeadroom h = thread_headroom(root.path());
  EXPECT_EQ(h.threads, UINT64_MAX);
  EXPECT_EQ(h.limit, "");
}

}  // namespace
}  // namespace gpufeed::loader
