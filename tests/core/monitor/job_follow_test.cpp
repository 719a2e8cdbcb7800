// new_job_processes: which processes a --comm/--cgroup rescan starts to follow.
#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "gpufeed/monitor/job_follow.hpp"

namespace gpufeed {
namespace {

// init(1) -> shell(10) -> trainer(20) -> workers(21, 22); a second trainer(30) under init.
const std::vector<ProcEntry> kTable = {{1, 0}, {10, 1}, {20, 10}, {21, 20}, {22, 20}, {30, 1}, {99, 1}};

using Follows = std::vector<std::pair<int, int>>;

// (pid, the process it follows under; 0: a new rank) for each new process,
// in the order new_job_processes gives them; gpufeed itself is pid 99.
Follows follows(const std::vector<ProcEntry>& table, const std::set<int>& matched, const std::set<int>& followed) {
  Follows out;
  for (const auto& p : new_job_processes(table, matched, followed, 99)) out.emplace_back(p.pid, p.under);
  return out;
}

TEST(JobFollow, AMatchUnderNoFollowedProcessIsANewRankAndItsMatchedWorkersFollowAncestorsFirst) {
  const auto n = follows(kTable, {22, 21, 20}, {});
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(n[0], (std::pair{20, 0})) << "the trainer starts a rank";
  EXPECT_EQ(n[1].second, 20);
  EXPECT_EQ(n[2].second, 20);
}

TEST(JobFollow, AMatchUnderAFollowedProcessIsItsWorker) {
  // 30 first: a second trainer is a second rank.
  EXPECT_EQ(follows(kTable, {20, 21, 30}, {20}), (Follows{{30, 0}, {21, 20}}));
}

TEST(JobFollow, TheNearestFollowedOrMatchedAncestorIsTheOneItFollowsUnder) {
  // The trainer (20) does not match: the shell's rank holds its worker.
  EXPECT_EQ(follows(kTable, {10, 21}, {}), (Follows{{10, 0}, {21, 10}}));
}

TEST(JobFollow, ItselfFollowedOnesAndProcessesGoneSinceTheScanAreLeftOut) {
  EXPECT_TRUE(new_job_processes(kTable, {99}, {}, 99).empty()) << "gpufeed never follows itself";
  EXPECT_TRUE(new_job_processes(kTable, {20}, {20}, 99).empty());
  EXPECT_TRUE(new_job_processes(kTable, {77}, {}, 99).empty()) << "77 is not in the table";
}

TEST(JobFollow, AParentCycleInASnapshotEndsTheWalk) {
  EXPECT_EQ(follows({{5, 6}, {6, 5}}, {5}, {}), (Follows{{5, 0}}));
}

TEST(JobFollow, ARestartedRankTakesTheLowestFreeRank) {
  EXPECT_EQ(free_rank({}), 0);
  EXPECT_EQ(free_rank({0, 1, 3}), 2);
  EXPECT_EQ(free_rank({1}), 0);
}

}  // namespace
}  // namespace gpufeed
