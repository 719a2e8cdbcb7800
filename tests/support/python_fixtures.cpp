#include "support/python_fixtures.hpp"

#include <unistd.h>

#include <cstdlib>
#include <memory>

namespace gpufeed::testing {

std::vector<std::string> stat_loop_job(double seconds) {
  return {kPython, "-c",
          "import os, time\nend = time.time() + " + std::to_string(seconds) +
              "\nwhile time.time() < end:\n    os.stat('/etc/hostname')\n    time.sleep(0.01)\n"};
}

std::string demo_job_command(int seconds) {
  return "/usr/bin/python3 " + std::string(GPUFEED_SOURCE_DIR) + "/scripts/demo_job.py " + std::to_string(seconds);
}

std::optional<std::string> torch_unavailable_reason() {
  if (access("/usr/bin/python3", X_OK) != 0) return "no /usr/bin/python3";
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    return "Debian's python3-torch is not installed for /usr/bin/python3";
  }
  return std::nullopt;
}

const TempDir* shared_jpeg_dataset() {
  static const std::unique_ptr<TempDir> dataset = [] {
    auto dir = std::make_unique<TempDir>();
    const std::string cmd = "/usr/bin/python3 " + std::string(GPUFEED_SOURCE_DIR) +
                            "/tests/fixtures/make_dataset.py " + dir->path().string() +
                            " --files 240 --classes 4 --size-kb 50 --seed 7 >/dev/null";
    return std::system(cmd.c_str()) == 0 ? std::move(dir) : nullptr;
  }();
  return dataset.get();
}

}  // namespace gpufeed::testing
