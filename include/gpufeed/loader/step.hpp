#pragma once
// The consumer of batches: a simulated step of fixed or random length, or a
// TorchScript model run by LibTorch (forward and backward) in an optional
// plugin that is loaded only when --model is given.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gpufeed::loader {

struct StepInput {
  const std::byte* host = nullptr;  // the collated batch in page-locked memory
  void* device = nullptr;           // its copy on the device (host memory for the host backend; the host batch itself for cpu)
  std::size_t bytes = 0;
  int batch_size = 0;               // samples in this batch
  std::vector<std::int64_t> sample_shape;  // one sample's shape
};

class StepRunner {
 public:
  virtual ~StepRunner() = default;
  virtual std::string describe() const = 0;  // "sleep 40 ms ± 5 ms", "TorchScript resnet.pt (forward+backward, CPU)"
  // Runs one training step on the batch; blocks for its duration.
  virtual void run(const StepInput& batch) = 0;
};

}  // namespace gpufeed::loader
