#pragma once
// `tune --exec --metric data-wait`: a job's throughput from diagnose's
// data-wait signal, for a job that prints no throughput of its own. The
// trial traces the job's training loop (eBPF, src/trace/job_wait_trace.cpp);
// this reads the loop's waits for data: each wait ends with a batch, the
// gaps between waits are whole steps (diagnose's loop_step), so the steps
// those gaps hold over the time they span are the batches the loop took.
// Pure: the evidence comes from the tracer in the CLI, by hand in tests.
#include <optional>
#include <string>

#include "gpufeed/diagnose/evidence.hpp"

namespace gpufeed::tune {

struct WaitMetric {
  std::optional<double> samples_per_s;  // per rank; absent: see `unavailable`
  double starvation = 0;                // the loop's share of its time waiting for data
  std::optional<double> step_ms;        // the job's step, where nearly every step waited (each gap one step)
  int steps = 0;                        // steps counted (all loops)
  bool by_known_step = false;           // a fed loop: the known step priced it
  bool more_time_helps = false;         // few waits, each long: a longer trial would count enough
  std::string how;                      // for the trial's note
  std::string unavailable;              // why there is no figure
};

// The figure: the steps the loop's wait-to-wait gaps hold (diagnose's
// loop_step) over the time they span. The job's step from an earlier trial
// (`known_step_is_measured`) or --step-ms, `known_step_ms`, counts them
// where the gaps' own step is within 15% of 2, 3 ... of it (gaps of several
// steps only) or under 0.7 of it (split waits), or the gaps are irregular. A loop that seldom waits (fed) is priced by the
// known step: batch x (1 - its share waiting) / step. One that seldom
// waits but waits most of its time gets a batch too rarely to count in the
// window: no figure, and a longer trial would give one.
WaitMetric wait_metric(const Evidence& e, int batch_size, std::optional<double> known_step_ms,
                       bool known_step_is_measured = true);

}  // namespace gpufeed::tune
