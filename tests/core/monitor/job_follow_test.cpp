// new_job_processes: which processes a --comm/--cgroup rescan starts to follow.
#include <gtest/gtest.h>

#include "gpufeed/monitor/job_follow.hpp"

namespace gpufeed {
namespace {

// init(1) -> shell(10) -> trainer(20) -> workers(21, 22); a second trainer(30) under init.
const std::vector<ProcEntry> kTable = {{1, 0}, {10, 1}, {20, 10}, {21, 20}, {22, 20}, {30, 1}, {99, 1}};

TEST(JobFollow, AMatchUnderNoFollowedProcessIsANewRankAndItsMatchedWorkersFollowAncestorsFirst) {
  const auto n = new_job_processes(kTable, {22, 21, 20}, {}, 99);
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(n[0].pid, 20);
  EXPECT_EQ(n[0].under, 0) << "the trainer starts a rank";
  EXPECT_EQ(n[1].under, 20);
  EXPECT_EQ(n[2].under, 20);
}

TEST(JobFollow, AMatchUnderAFollowedProcessIsItsWorker) {
  const auto n = new_job_processes(kTable, {20, 21, 30}, {20}, 99);
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].pid, 30);
  EXPECT_EQ(n[0].under, 0) << "a second trainer is a second rank";
  EXPECT_EQ(n[1].pid, 21);
  EXPECT_EQ(n[1].under, 20);
}

TEST(JobFollow, TheNearestFollowedOrMatchedAncestorIsTheOneItFollowsUnder) {
  const auto n = new_job_processes(kTable, {10, 21}, {}, 99);
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].pid, 10);
  EXPECT_EQ(n[1].pid, 21);
  EXPECT_EQ(n[1].under, 10) << "the trainer (20) does not match: the shell's rank holds its worker";
}

TEST(JobFollow, ItselfFollowedOnesAndProcessesGoneSinceTheScanAreLeftOut) {
  EXPECT_TRUE(new_job_processes(kTable, {99}, {}, 99).empty()) << "gpufeed never follows itself";
  EXPECT_TRUE(new_job_processes(kTable, {20}, {20}, 99).empty());
  EXPECT_TRUE(new_job_processes(kTable, {77}, {}, 99).empty()) << "77 is not in the table";
}

TEST(JobFollow, AParentCycleInASnapshotEndsTheWalk) {
  const auto n = new_job_processes({{5, 6}, {6, 5}}, {5}, {}, 99);
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].pid, 5);
  EXPECT_EQ(n[0].under, 0);
}

TEST(JobFollow, ARestartedRankTakesTheLowestFreeRank) {
  EXPECT_EQ(free_rank({}), 0);
  EXPECT_EQ(free_rank({0, 1, 3}), 2);
  EXPECT_EQ(free_rank({1}), 0);
}

}  // namespace
}  // namespace gpufeed
