// A job's throughput from its loop's waits for data (wait_metric.hpp).
#include "gpufeed/tune/wait_metric.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "gpufeed/setting.hpp"

namespace gpufeed::tune {

WaitMetric wait_metric(const Evidence& e, int batch_size, std::optional<double> known_step_ms,
                       bool known_step_is_measured) {
  WaitMetric out;
  if (!e.ebpf) {
    out.unavailable = "the loop's waits were not traced (eBPF did not run)";
    return out;
  }
  const LoaderFigures figures = loader_figures(e);
  out.starvation = figures.data_wait_fraction.value_or(0);
  const bool have_known = known_step_ms && *known_step_ms > 0;
  LoopStep step = loop_step(e);
  // A step the gaps give within 15% of two or more of the job's known one
  // is most likely that many steps: two workers that each deliver every
  // other batch leave gaps of two steps only. One under 0.7 of it is a
  // cluster of split waits (a loop waiting for one batch while others
  // arrive out of order reads as steps of a few ms in a 60 ms loop). Count
  // those gaps by the known
  // step, and irregular gaps too. Any other step is the loop's own (a loop
  // slowed by workers crowding its cores), and counts as it is.
  bool by_known = false;
  const auto not_its_own = [&](double ms) {
    const double k = std::round(ms / *known_step_ms);
    return ms < 0.7 * *known_step_ms || (k >= 2 && std::abs(ms / *known_step_ms - k) <= 0.15 * k);
  };
  double base = known_step_ms.value_or(0);
  if (have_known && step.cycles >= 8 && (!step.median_ms || not_its_own(*step.median_ms))) {
    LoopStep counted = loop_step(e, 1.0, 8, 0.55, known_step_ms);
    // The gaps of about one known step are this trial's one-step gaps: the
    // step to count by. --step-ms is the step's sleep alone, and a loop
    // that also spends a few ms on each batch would read fast by that much
    // if its gaps were counted by the sleep, its longer gaps rounded up.
    if (counted.median_ms && std::abs(*counted.median_ms / base - 1) > 0.02 &&
        *counted.median_ms >= 0.85 * base && *counted.median_ms <= 1.3 * base) {
      base = *counted.median_ms;
      counted = loop_step(e, 1.0, 8, 0.55, base);
    }
    if (counted.median_ms) {
      step = counted;
      by_known = true;
    }
  }
  const bool seldom_waits = step.cycles < 8;  // loop_step's own minimum
  if (step.median_ms && step.loops > 0 && step.span_s > 0 && step.steps > 0) {
    // Where nearly every step waited, each gap is one step: the job's step,
    // for later trials to count by.
    if (!by_known && step.ready_fraction < 0.2) out.step_ms = step.median_ms;
    out.steps = step.steps;
    const double batches_per_s = step.steps / static_cast<double>(step.loops) / step.span_s;
    out.samples_per_s = batches_per_s * batch_size;
    out.how = by_known ? fmt::format("{} steps of {:.1f} ms (its one-step gaps, by the job's {:.1f} ms{}) in {:.1f} s "
                                     "of the loop, {:.0f}% waiting for data",
                                     step.steps, base, *known_step_ms,
                                     known_step_is_measured ? std::string(" in earlier trials") : " of " + spell(Setting::step_ms), step.span_s,
                                     out.starvation * 100)
                       : fmt::format("{} steps of {:.1f} ms in {:.1f} s of the loop, {:.0f}% waiting for data",
                                     step.steps, *step.median_ms, step.span_s, out.starvation * 100);
    return out;
  }
  const bool mostly_waiting = out.starvation >= 0.5;
  if (seldom_waits && mostly_waiting) {
    out.more_time_helps = true;
    out.unavailable = fmt::format("the loop waited for data {} times in {:.1f} s, {:.0f}% of its time: too few "
                                  "batches to count (raise {})",
                                  step.cycles, e.window_s, out.starvation * 100, spell(Setting::trial_seconds));
    return out;
  }
  if (have_known) {
    // The loop's time is steps and waits: (1 - waiting) of it is steps.
    out.by_known_step = true;
    out.samples_per_s = batch_size * 1e3 / *known_step_ms * (1 - out.starvation);
    out.how = fmt::format("{}; priced by the job's step, {:.1f} ms{}, and its {:.0f}% waiting",
                          seldom_waits ? fmt::format("the loop waited for data {} times (fed)", step.cycles)
                                       : step.unavailable,
                          *known_step_ms, known_step_is_measured ? std::string(" in earlier trials") : " (" + spell(Setting::step_ms) + ")",
                          out.starvation * 100);
    return out;
  }
  out.unavailable = seldom_waits ? fmt::format("the loop waited for data only {} times: it is fed at this config, and "
                                               "no earlier trial timed the job's step (give {})",
                                               step.cycles, spell(Setting::step_ms))
                                 : step.unavailable;
  return out;
}

}  // namespace gpufeed::tune
