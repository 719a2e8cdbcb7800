#include "gpufeed/tune/from_diagnosis.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace gpufeed::tune {
namespace {

double number(const Json& o, const char* key, double fallback = 0) {
  if (!o.is_object() || !o.contains(key) || !o[key].is_number()) return fallback;
  return o[key].get<double>();
}

}  // namespace

int batches_per_wait(double files_opened, double worker_wall_s, int workers_alive, int batch_size, double steps_seen,
                     double span_s, int loops, double* ratio) {
  if (ratio) *ratio = 0;
  if (files_opened < 50 || worker_wall_s <= 0 || workers_alive < 1 || batch_size < 1 || steps_seen < 1 ||
      span_s <= 0 || loops < 1) {
    return 1;
  }
  // Workers alive together deliver files / (wall / alive) files per second.
  const double supplied_per_s = files_opened * workers_alive / worker_wall_s / batch_size;
  const double consumed_per_s = steps_seen * 1.0 / span_s;  // all loops' steps over one loop's span
  const double r = supplied_per_s / consumed_per_s;
  if (ratio) *ratio = r;
  return r >= 1.6 ? static_cast<int>(std::lround(r)) : 1;
}

DiagnosisReading read_diagnosis(const Json& doc, int batch_size) {
  DiagnosisReading out;
  const Json evidence = doc.is_object() ? doc.value("evidence", Json()) : Json();
  const Json step = evidence.is_object() ? evidence.value("loop_step", Json()) : Json();
  const double median = number(step, "median_ms");
  if (median <= 0) {
    out.error = step.is_object() && step.value("unavailable", Json()).is_string()
                    ? step["unavailable"].get<std::string>()
                    : "it has no evidence.loop_step (written by an older gpufeed?)";
    return out;
  }
  JobFromDiagnosis job;
  job.step_ms = median;
  job.spread_ms = number(step, "spread_ms");
  job.cycles = static_cast<int>(number(step, "cycles"));

  const Json workers = evidence.value("workers", Json());
  const double files = number(workers, "files_opened");
  const double ready = std::clamp(number(step, "ready_fraction"), 0.0, 0.95);
  const int loops = static_cast<int>(number(step, "loops"));
  const int alive = static_cast<int>(number(workers, "max_per_rank")) * std::max(1, loops);
  // The steps the gaps held; a diagnosis without "steps" (before 2026-12)
  // gives them from its gaps, which count a wait split in two as two.
  const double steps_seen = number(step, "steps", job.cycles / (1.0 - ready));
  job.batches_per_wait = batches_per_wait(files, number(workers, "wall_s"), alive, batch_size, steps_seen,
                                          number(step, "span_s"), loops, &job.supply_ratio);
  if (job.batches_per_wait > 1) {
    // Each gap held that many steps: the workers' batches came together and
    // the loop found the later ones ready without a wait over 0.5 ms.
    job.step_note = fmt::format("the workers delivered {:.1f}x the batches the loop waited for (files opened / batch "
                                "size {}): each gap held {} steps",
                                job.supply_ratio, batch_size, job.batches_per_wait);
    job.step_ms = median / job.batches_per_wait;
    job.spread_ms /= std::sqrt(static_cast<double>(job.batches_per_wait));
  }
  // The CPU its workers spent per file they opened (user + system, /proc):
  // Python, the real decode and collate, as the job pays them; and the
  // loop's own (receiving and unpickling batches), per sample so it follows
  // --batch-size. Attach to a running job (--pid) for the loop's: a launched
  // job's loop also spends its start-up (imports) in the window.
  const double cpu_s = number(workers, "cpu_s");
  if (files >= 50 && cpu_s > 0) job.worker_cpu_ms = cpu_s * 1e3 / files;
  double loop_cpu_s = 0;
  for (const auto& p : evidence.value("processes", Json::array())) {
    if (p.is_object() && p.value("role", "") == "loop") loop_cpu_s += number(p, "cpu_s");
  }
  if (files >= 50 && loop_cpu_s > 0) job.loop_cpu_ms = loop_cpu_s * 1e3 / files;
  // Path calls are counted over the whole job, the loop's start-up imports
  // included: a diagnosis attached to a running job (--pid) counts the
  // workers' calls alone. Rounded: a module's stat now and then is noise.
  const Json calls = evidence.value("path_calls", Json());
  if (files >= 50 && calls.is_object()) {
    const double stats = number(calls.value("stat", Json()), "calls");
    const double opens = number(calls.value("open", Json()), "calls");
    job.stats_per_file = static_cast<int>(std::clamp(std::lround(stats / files), 0L, 4L));
    job.extra_opens_per_file = static_cast<int>(std::clamp(std::lround(opens / files) - 1, 0L, 4L));
  }
  out.job = job;
  return out;
}

}  // namespace gpufeed::tune
