#pragma once
// Diagnosis rules: pure functions from Evidence to findings. Every finding
// has a stable id, a severity, a one-line title, the measured numbers that
// triggered it, a concrete change to make, and a confidence. docs/findings.md
// lists them with their thresholds and reasoning.
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/diagnose/evidence.hpp"
#include "gpufeed/document.hpp"

namespace gpufeed {

enum class Severity { Info = 0, Warning = 1, Critical = 2 };
enum class Confidence { Low = 0, Medium = 1, High = 2 };
std::string severity_name(Severity s);
std::optional<Severity> parse_severity(const std::string& text);
std::string confidence_name(Confidence c);

struct Finding {
  std::string id;          // stable, e.g. "storage.slow-metadata"
  Severity severity = Severity::Info;
  std::string title;       // one line
  std::vector<std::string> evidence;  // the measured numbers, one per line
  Json figures = Json::object();      // the same numbers for machines
  std::string advice;      // the change to make
  Confidence confidence = Confidence::High;
  double weight = 0;       // orders causes: the share of loop time it explains
};

// Thresholds (docs/findings.md explains each).
struct RuleThresholds {
  double starved_warning = 0.10;        // loop data-wait fraction
  double starved_critical = 0.30;
  double workers_saturated = 0.80;      // worker busy fraction
  double slow_path_time_share = 0.10;   // of worker wall time in slow path calls on one mount
  std::uint64_t min_slow_calls = 20;
  double io_bound_share = 0.50;         // of worker busy time in file/path calls
  double cpu_bound_share = 0.70;        // of worker busy time on CPU
  double cpu_saturated_pct = 85.0;      // host CPU busy of usable CPUs
  double cpu_pressure_saturated_pct = 50.0;  // PSI cpu some: share of the window with a task waiting for a CPU
  double burst_top_share = 0.50;        // share of wait time in the longest 10% of waits
  std::uint64_t min_wait_spans = 20;
  double small_file_bytes = 1 << 20;    // mean bytes read per opened file
  double worker_headroom = 1.15;        // extra workers for the latency tail
  double gpu_starved_busy = 0.50;       // job GPUs' mean busy fraction below this while the loop waits
  double gpu_bound_busy = 0.90;         // ... at or above this while it does not
  double gpu_period_strength = 0.30;    // autocorrelation needed to call the busy signal periodic
};

// Every rule in its table (findings.cpp), in order; most severe first.
std::vector<Finding> evaluate_rules(const Evidence& e, const RuleThresholds& t = {});

// Every id a rule may emit, in the table's order.
std::vector<std::string> finding_ids();

}  // namespace gpufeed
