#include "gpufeed/monitor/finding_log.hpp"

#include <set>

namespace gpufeed {
namespace {

FindingChange change_of(const ActiveFinding& a, bool started, double t_s) {
  FindingChange c;
  c.t_s = t_s;
  c.started = started;
  c.id = a.finding.id;
  c.severity = a.finding.severity;
  c.title = a.finding.title;
  c.advice = a.finding.advice;
  if (started) c.figures = a.finding.figures;
  c.active_s = started ? 0.0 : t_s - a.since_s;
  return c;
}

}  // namespace

std::vector<FindingChange> FindingLog::update(const std::vector<Finding>& findings, double t_s) {
  std::vector<FindingChange> changes;
  std::set<std::string> seen;
  for (const Finding& f : findings) {
    if (f.severity < min_severity_ || !seen.insert(f.id).second) continue;
    auto [it, inserted] = active_.try_emplace(f.id);
    it->second.finding = f;
    it->second.missed = 0;
    if (inserted) {
      it->second.since_s = t_s;
      changes.push_back(change_of(it->second, true, t_s));
    }
  }
  for (auto it = active_.begin(); it != active_.end();) {
    if (seen.count(it->first) || ++it->second.missed < stop_after_) {
      ++it;
      continue;
    }
    changes.push_back(change_of(it->second, false, t_s));
    it = active_.erase(it);
  }
  return changes;
}

std::vector<FindingChange> FindingLog::close(double t_s) {
  std::vector<FindingChange> changes;
  for (const auto& [id, a] : active_) changes.push_back(change_of(a, false, t_s));
  active_.clear();
  return changes;
}

}  // namespace gpufeed
