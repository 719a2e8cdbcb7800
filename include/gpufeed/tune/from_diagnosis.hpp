#pragma once
// What `tune --from` takes from a gpufeed.diagnosis/v1 document (docs/tune.md):
// the job's step between data waits, and the CPU its workers and its loop
// spend per sample.
#include <optional>
#include <string>

#include "gpufeed/document.hpp"

namespace gpufeed::tune {

struct JobFromDiagnosis {
  double step_ms = 0;            // one step of the loop
  double spread_ms = 0;
  int cycles = 0;                // wait-to-wait gaps it came from
  int batches_per_wait = 1;      // > 1: the loop's gaps spanned that many steps
  double supply_ratio = 0;       // batches delivered / steps the gaps show (0: not known)
  std::string step_note;         // how the step was told from the gaps (empty: one step per gap)
  double worker_cpu_ms = 0;      // CPU per sample in the workers (0: unknown)
  double loop_cpu_ms = 0;        // CPU per sample in the loop process (0: unknown)
  // The job's path calls per file its workers opened (evidence.path_calls
  // over workers.files_opened), rounded, at most 4 each: what tune's storage
  // measurement replays. -1: too few files to tell (under 50).
  int stats_per_file = -1;
  int extra_opens_per_file = -1;
};

// Why a document gives no step (a sentence to quote), or the job's figures.
// `batch_size` is the job's: the files the workers opened per batch tell how
// many steps a gap spans when the loop's waits are fewer than its batches
// (several workers' batches arriving together, none found ready in between).
struct DiagnosisReading {
  std::optional<JobFromDiagnosis> job;
  std::string error;
};
DiagnosisReading read_diagnosis(const Json& doc, int batch_size);

// Steps per loop wait from the supply rate: batches the workers delivered per
// second (files opened / batch size, over their wall time with the workers
// that were alive together) against the gaps' steps per second. 1 unless the
// ratio is at least 1.6; the ratio itself is `*ratio` when given.
int batches_per_wait(double files_opened, double worker_wall_s, int workers_alive, int batch_size, double steps_seen,
                     double span_s, int loops, double* ratio = nullptr);

}  // namespace gpufeed::tune
