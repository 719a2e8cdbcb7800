#pragma once
// The simulated step and the simple per-sample transforms that need no
// library: enough to run the loader with no GPU, model or images.
#include <cstdint>
#include <memory>
#include <string>

#include "gpufeed/loader/step.hpp"
#include "gpufeed/loader/transform.hpp"

namespace gpufeed::loader {

// "40" or "40:5" (mean and spread in ms; normal, clipped at zero).
struct StepTime {
  double mean_ms = 0;
  double spread_ms = 0;
};
StepTime parse_step_time(const std::string& text);  // usage error on bad text

std::unique_ptr<StepRunner> make_sleep_step(StepTime time, std::uint64_t seed = 1);

// --decode none: the sample's bytes copied into a fixed-size slot (truncated
// or zero-padded to `slot_bytes`).
std::unique_ptr<SampleTransform> make_copy_transform(std::size_t slot_bytes);
// --cpu-us N: the copy plus N microseconds of CPU work on the worker thread.
std::unique_ptr<SampleTransform> make_cpu_cost_transform(std::size_t slot_bytes, double cpu_us);
// `inner`, plus `extra_us` of CPU work per sample: the built-in loader paying
// what a real job's workers pay on top of the transform (tune --from).
std::unique_ptr<SampleTransform> with_extra_cpu(std::unique_ptr<SampleTransform> inner, double extra_us);
// `inner`, its CPU per sample multiplied by `factor` (> 1; otherwise `inner`
// as it is): after each sample the worker spins on until its thread has spent
// `factor` times the CPU the sample took. Being proportional, the extra cost
// slows down and speeds up with the machine as the decode does (tune
// --pytorch-probe: a PIL pipeline costs a ratio of the built-in decode).
std::unique_ptr<SampleTransform> with_cpu_scale(std::unique_ptr<SampleTransform> inner, double factor);
// `cpu_us` of CPU work on the loop's thread before each `inner` step: the
// training loop's own per-batch work (receiving, unpickling) as it competes
// with the workers for cores (tune --from).
std::unique_ptr<StepRunner> with_loop_cpu(std::unique_ptr<StepRunner> inner, double cpu_us);

}  // namespace gpufeed::loader
