#pragma once
// Which findings are active on monitor's sliding window, and when one starts
// or stops: a change is logged once, not every evaluation. A finding stops
// only after `stop_after` evaluations in a row without it, so one that sits
// on its threshold does not flap on and off. Pure.
#include <map>
#include <string>
#include <vector>

#include "gpufeed/diagnose/findings.hpp"

namespace gpufeed {

struct FindingChange {
  double t_s = 0;
  bool started = true;  // false: stopped
  std::string id;
  Severity severity = Severity::Info;
  std::string title;   // the finding's title (when it started: its latest)
  std::string advice;
  Json figures = Json::object();  // started: the finding's figures (recommended_num_workers, ...)
  double active_s = 0;  // stopped: how long it was active
};

struct ActiveFinding {
  Finding finding;  // its latest evaluation
  double since_s = 0;
  int missed = 0;   // evaluations in a row without it
};

class FindingLog {
 public:
  explicit FindingLog(int stop_after = 3, Severity min_severity = Severity::Warning)
      : stop_after_(stop_after < 1 ? 1 : stop_after), min_severity_(min_severity) {}

  // One evaluation's findings (those under min_severity are not followed).
  std::vector<FindingChange> update(const std::vector<Finding>& findings, double t_s);
  // Ends every active finding (the monitor stops): one change each.
  std::vector<FindingChange> close(double t_s);
  const std::map<std::string, ActiveFinding>& active() const { return active_; }

 private:
  int stop_after_;
  Severity min_severity_;
  std::map<std::string, ActiveFinding> active_;
};

}  // namespace gpufeed
