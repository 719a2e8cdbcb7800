#pragma once
// Which processes `gpufeed monitor --comm/--cgroup` starts to follow on a
// rescan of the process table. A job that restarts comes back as new
// processes: the matched ones that nothing followed is an ancestor of start
// a rank each; a matched process under a followed (or newly found) one is a
// worker of that one's rank. Pure: the session reads /proc, this decides.
#include <set>
#include <vector>

namespace gpufeed {

struct ProcEntry {
  int pid = 0;
  int ppid = 0;
};

struct NewProcess {
  int pid = 0;
  int under = 0;  // the nearest followed or matched ancestor; 0: a new rank's main process
};

// The matched processes that are not followed yet (and are not `self`),
// ancestors before descendants, so a caller that follows them in order
// always finds `under` followed already.
std::vector<NewProcess> new_job_processes(const std::vector<ProcEntry>& table, const std::set<int>& matched,
                                          const std::set<int>& followed, int self);

// The lowest rank no live main process holds: a restarted rank takes the
// place its predecessor left, so rank labels stay few.
int free_rank(const std::set<int>& held);

}  // namespace gpufeed
