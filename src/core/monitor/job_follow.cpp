#include "gpufeed/monitor/job_follow.hpp"

#include <algorithm>
#include <map>

namespace gpufeed {

std::vector<NewProcess> new_job_processes(const std::vector<ProcEntry>& table, const std::set<int>& matched,
                                          const std::set<int>& followed, int self) {
  std::map<int, int> parent;
  for (const ProcEntry& p : table) parent[p.pid] = p.ppid;
  struct Found {
    NewProcess p;
    int depth = 0;
  };
  std::vector<Found> found;
  for (int pid : matched) {
    if (pid == self || followed.count(pid) || !parent.count(pid)) continue;
    Found f{{pid, 0}, 0};
    // Walk up to init; the table is a snapshot, so a cycle cannot be ruled
    // out by construction: the walk is bounded.
    int depth = 0;
    for (int a = parent[pid]; a > 1 && a != pid && depth < 4096; ++depth) {
      if (f.p.under == 0 && (followed.count(a) || matched.count(a))) f.p.under = a;
      auto it = parent.find(a);
      if (it == parent.end()) break;
      a = it->second;
    }
    f.depth = depth;
    found.push_back(f);
  }
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.depth < b.depth; });
  std::vector<NewProcess> out;
  out.reserve(found.size());
  for (const Found& f : found) out.push_back(f.p);
  return out;
}

int free_rank(const std::set<int>& held) {
  int r = 0;
  while (held.count(r)) ++r;
  return r;
}

}  // namespace gpufeed
