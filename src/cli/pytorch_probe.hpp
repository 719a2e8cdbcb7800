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
#include "gpufeed/app/tune_session.hpp"
#include "gpufeed/loader/sample_source.hpp"
#include "gpufeed/loader/transform.hpp"
#include "gpufeed/tune/pytorch_probe.hpp"

namespace gpufeed::cli {

using app::PytorchProbeRequest;

// The Python the probe runs with when --python is not given.
std::string default_python();

// Throws a usage error naming --python or the script when the probe cannot
// run or answer (a Python without torch), a runtime error when it fails.
tune::PytorchCosts probe_pytorch(const PytorchProbeRequest& request, const Io& io);

}  // namespace gpufeed::cli
