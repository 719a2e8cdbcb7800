#include "pytorch_probe.hpp"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "child_process.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed::cli {
namespace {

namespace fs = std::filesystem;

// Found beside the binary's tree, or in this source checkout.
std::string probe_script(const Io& io) {
  std::vector<fs::path> roots;
  if (auto env = io.env("GPUFEED_PYTHON_DIR")) roots.emplace_back(*env);
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    roots.push_back(exe.parent_path().parent_path() / "python");  // build tree: build/../python
    roots.push_back(exe.parent_path().parent_path() / "share/gpufeed/python");
  }
  roots.emplace_back(GPUFEED_SOURCE_PYTHON);
  for (const auto& root : roots) {
    const auto p = root / "gpufeed_pytorch_probe.py";
    if (fs::exists(p)) return p.string();
  }
  throw usage_error("--pytorch-probe: python/gpufeed_pytorch_probe.py is not beside this gpufeed",
                    "set GPUFEED_PYTHON_DIR to the repository's python/ directory");
}

// A directory that removes itself, for the copied samples.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (fs::temp_directory_path() / "gpufeed-pytorch-probe-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw runtime_error("cannot create a temporary directory for --pytorch-probe", "check TMPDIR");
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Up to `most` samples spread over the dataset: its classes and sizes.
void copy_samples(loader::SampleSource& source, const std::vector<loader::SampleInfo>& samples, const fs::path& dir,
                  std::size_t most) {
  const std::size_t n = std::min(most, samples.size());
  std::vector<std::byte> bytes;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& s = samples[i * samples.size() / n];
    source.read(s, bytes);
    std::ofstream f(dir / fmt::format("{:04}", i), std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw runtime_error(fmt::format("cannot write a sample to {} for --pytorch-probe", dir.string()), "check TMPDIR's free space");
  }
}

std::string last_line(const std::string& text) {
  auto end = text.find_last_not_of("\n\r ");
  if (end == std::string::npos) return {};
  const auto start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

}  // namespace

std::string default_python() { return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

tune::PytorchCosts probe_pytorch(const PytorchProbeRequest& r, const Io& io) {
  const std::string python = r.python.empty() ? default_python() : r.python;
  const std::string script = probe_script(io);
  ScratchDir dir;
  copy_samples(*r.source, *r.samples, dir.path(), 64);
  const std::string filter = r.filter == "fast" ? "bilinear" : r.filter;
  const std::vector<std::string> argv = {python, script, "--samples", dir.path().string(), "--batch-size",
                                         std::to_string(r.batch_size), "--size",
                                         fmt::format("{0}x{0}", r.image_size), "--crop", r.crop, "--filter", filter,
                                         "--seconds", fmt::format("{:g}", r.seconds), "--workers",
                                         std::to_string(r.workers)};
  // Imports and two DataLoader runs: a minute is far beyond what it needs.
  const ChildResult c = run_child(argv, 60 + 4 * r.seconds, r.stop);
  if (!c.started) {
    throw usage_error(fmt::format("--python {}: no such program", python),
                      "install Debian's python3-torch, or give --python a Python that has torch and PIL");
  }
  if (c.stopped) throw runtime_error("--pytorch-probe was interrupted: no config written");
  if (c.timed_out) throw runtime_error(fmt::format("--pytorch-probe: {} did not answer within {:.0f} s", python, 60 + 4 * r.seconds));
  if (c.exit_code != 0) {
    const std::string why = last_line(c.err).empty() ? fmt::format("exit status {}", c.exit_code) : last_line(c.err);
    if (c.exit_code == 3) throw usage_error(fmt::format("--pytorch-probe: {}", why), "or tune without --pytorch-probe");
    throw runtime_error(fmt::format("--pytorch-probe failed: {}", why),
                        fmt::format("run {} {} --help to see what it needs", python, script));
  }
  Json doc;
  try {
    doc = Json::parse(last_line(c.out));
  } catch (const nlohmann::json::exception&) {
    throw runtime_error(fmt::format("--pytorch-probe: {} printed no JSON answer", python), "run the probe by hand to see why");
  }
  auto reading = tune::read_pytorch_probe(doc);
  if (!reading.costs) throw runtime_error("--pytorch-probe: " + reading.error);
  return *reading.costs;
}

}  // namespace gpufeed::cli
