// The interpreter, fixture scripts and datasets that tests run as traced jobs.
// Debian's python3 is the one scripts/setup.sh gives torch to, so tests name it
// by path rather than trusting PATH.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace gpufeed::testing {

inline const std::string kPython = "/usr/bin/python3";

inline std::string fixture_script(const std::string& name) {
  return std::string(GPUFEED_SOURCE_DIR) + "/tests/fixtures/" + name;
}

// A stand-in job that stats a file every 10 ms for `seconds`.
std::vector<std::string> stat_loop_job(double seconds = 3600);

// The demo's built-in starving job (scripts/demo_job.py) as a shell command:
// its loop reads items through a pipe from a producer that needs 40 ms per
// item and steps 5 ms per item, so it waits about 87% of the time.
std::string demo_job_command(int seconds);

// /usr/bin/python3 with python3-torch, or a reason it is missing.
std::optional<std::string> torch_unavailable_reason();

// 240 ~50 KB JPEGs in 4 classes (tests/fixtures/make_dataset.py, seed 7)
// for the PyTorch jobs, made once per test process on first use and
// removed at its exit; null when the script failed.
const TempDir* shared_jpeg_dataset();

}  // namespace gpufeed::testing
