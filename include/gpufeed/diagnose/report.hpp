#pragma once
// `gpufeed diagnose` as a value: what was traced, the evidence and the
// findings; mapped to JSON (gpufeed.diagnosis/v1), text and a Chrome
// trace-event timeline (opens in Perfetto).
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/diagnose/findings.hpp"
#include "gpufeed/document.hpp"
#include "gpufeed/text.hpp"

namespace gpufeed {

struct DiagnosisTarget {
  int pid = 0;
  int rank = 0;
  std::string command;  // its command line, as /proc shows it
};

struct DiagnosisReport {
  std::vector<DiagnosisTarget> targets;
  bool launched = false;                  // started by gpufeed (-- CMD)
  std::optional<int> command_exit_code;   // when it ended inside the window
  std::string end_reason;                 // "duration", "interrupted", "target exited"
  Evidence evidence;
  std::vector<Finding> findings;
  std::vector<std::string> notes;         // what was not measured and why
};

DiagnosisReport make_diagnosis(std::vector<DiagnosisTarget> targets, Evidence evidence,
                               const RuleThresholds& thresholds = {});

// The finding that explains most of the loop's wait (not the symptom itself).
const Finding* top_cause(const DiagnosisReport& r);
// Highest severity among the findings, if any.
std::optional<Severity> worst_severity(const DiagnosisReport& r);

Json to_json(const DiagnosisReport& r);  // body of gpufeed.diagnosis/v1
void render_text(const DiagnosisReport& r, const TextStyle& style, bool verbose, std::ostream& out);
Json chrome_trace(const DiagnosisReport& r);

}  // namespace gpufeed
