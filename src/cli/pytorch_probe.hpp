#pragma once
// `tune --pytorch-probe`: runs python/gpufeed_pytorch_probe.py on a few of
// the dataset's images, copied to a temporary directory (so it times CPU,
// not the store), and reads what a stock PyTorch pipeline costs here; in
// turns with it, pausing its process group, times the built-in transform
// on the same images, so the two figures share this machine's speed.
#include <atomic>
#include <string>
#include <vector>

#include "app.hpp"
#include "gpufeed/loader/sample_source.hpp"
#include "gpufeed/loader/transform.hpp"
#include "gpufeed/tune/pytorch_probe.hpp"

namespace gpufeed::cli {

struct PytorchProbeRequest {
  loader::SampleSource* source = nullptr;
  const std::vector<loader::SampleInfo>* samples = nullptr;
  std::string python;  // empty: /usr/bin/python3 when it exists, else python3 from PATH
  int batch_size = 32;
  int workers = 1;  // DataLoader workers, all kept busy
  int image_size = 224;
  std::string crop = "center";  // tune's --crop
  std::string filter = "fast";  // tune's --filter; a PIL pipeline resizes with bilinear for "fast"
  double seconds = 3;
  // The built-in transform, timed on `workers` threads in turns with the
  // probe (PytorchCosts::builtin_cpu_ms); none: the probe alone.
  loader::SampleTransform* transform = nullptr;
  double turn_s = 0.25;  // each turn of the probe, and of the built-in transform
  const std::atomic<bool>* stop = nullptr;
};

// The Python the probe runs with when --python is not given.
std::string default_python();

// Throws a usage error naming --python or the script when the probe cannot
// run or answer (a Python without torch), a runtime error when it fails.
tune::PytorchCosts probe_pytorch(const PytorchProbeRequest& request, const Io& io);

}  // namespace gpufeed::cli
