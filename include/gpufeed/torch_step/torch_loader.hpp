#pragma once
// Adapter (src/torch_step): the LibTorch step behind the StepRunner port.
#include <memory>
#include <string>

#include "gpufeed/loader/step.hpp"

namespace gpufeed::loader {

// LibTorch step (src/torch_step): dlopen()s the plugin module, which loads
// `model_path` with torch::jit::load. Throws gpufeed::Error when the plugin
// or the model cannot be loaded (naming which and why).
std::unique_ptr<StepRunner> open_torch_step(const std::string& model_path);

}  // namespace gpufeed::loader
