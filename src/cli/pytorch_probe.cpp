#include "pytorch_probe.hpp"

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "child_process.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/thread_cpu.hpp"

namespace gpufeed::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

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

struct Blob {
  std::string key;
  std::vector<std::byte> bytes;
};

// Up to `most` samples spread over the dataset (its classes and sizes),
// written to `dir` for the probe and kept for the built-in transform.
std::vector<Blob> copy_samples(loader::SampleSource& source, const std::vector<loader::SampleInfo>& samples,
                               const fs::path& dir, std::size_t most) {
  const std::size_t n = std::min(most, samples.size());
  std::vector<Blob> blobs;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& s = samples[i * samples.size() / n];
    Blob b{s.key, {}};
    source.read(s, b.bytes);
    std::ofstream f(dir / fmt::format("{:04}", i), std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.bytes.data()), static_cast<std::streamsize>(b.bytes.size()));
    if (!f) throw runtime_error(fmt::format("cannot write a sample to {} for --pytorch-probe", dir.string()), "check TMPDIR's free space");
    blobs.push_back(std::move(b));
  }
  return blobs;
}

// Takes turns with the probe: once it has run a turn, pauses its process
// group, runs the built-in transform on as many threads for a turn (each
// thread's own CPU time per sample), and lets the probe go on. The probe's
// figures are CPU times, which a pause does not touch; over a few seconds
// of turns both see the same fast and slow spells of this machine's cores.
class BuiltinTurns {
 public:
  BuiltinTurns(loader::SampleTransform& transform, const std::vector<Blob>& blobs, int threads, double turn_s)
      : transform_(transform), blobs_(blobs), threads_(threads), turn_s_(turn_s) {}

  void tick(int group, const ChildResult& so_far) {
    const auto now = Clock::now();
    if (!timing_) {
      if (so_far.out.find("timing") == std::string::npos) return;  // still importing torch
      timing_ = true;
      resumed_ = now;
      return;
    }
    if (std::chrono::duration<double>(now - resumed_).count() < turn_s_) return;
    if (kill(-group, SIGSTOP) != 0) return;  // it has just ended
    struct Resume {
      int group;
      ~Resume() { kill(-group, SIGCONT); }
    } resume{group};
    run_turn();
    resumed_ = Clock::now();
  }

  // CPU per sample over every turn; 0 when none ran.
  double cpu_ms_per_sample() const {
    return samples_ ? static_cast<double>(cpu_ns_) / 1e6 / static_cast<double>(samples_) : 0.0;
  }

 private:
  void run_turn() {
    const auto until = Clock::now() + std::chrono::duration<double>(turn_s_);
    std::vector<std::uint64_t> cpu_ns(static_cast<std::size_t>(threads_), 0);
    std::vector<std::uint64_t> count(static_cast<std::size_t>(threads_), 0);
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads_));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads_; ++t) {
      pool.emplace_back([&, t] {
        const auto i = static_cast<std::size_t>(t);
        try {
          std::vector<std::byte> out(transform_.output_bytes());
          std::size_t next = (next_ + i * blobs_.size() / static_cast<std::size_t>(threads_)) % blobs_.size();
          const std::uint64_t t0 = thread_cpu_ns();
          while (Clock::now() < until) {
            const Blob& b = blobs_[next];
            transform_.apply(b.key, b.bytes, out);
            next = (next + 1) % blobs_.size();
            ++count[i];
          }
          cpu_ns[i] = thread_cpu_ns() - t0;
        } catch (...) {
          errors[i] = std::current_exception();
        }
      });
    }
    for (auto& th : pool) th.join();
    for (const auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
    for (std::size_t i = 0; i < cpu_ns.size(); ++i) {
      cpu_ns_ += cpu_ns[i];
      samples_ += count[i];
    }
    next_ = (next_ + 7) % blobs_.size();
  }

  loader::SampleTransform& transform_;
  const std::vector<Blob>& blobs_;
  int threads_;
  double turn_s_;
  bool timing_ = false;
  Clock::time_point resumed_{};
  std::size_t next_ = 0;
  std::uint64_t cpu_ns_ = 0;
  std::uint64_t samples_ = 0;
};

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
  const auto blobs = copy_samples(*r.source, *r.samples, dir.path(), 64);
  const std::string filter = r.filter == "fast" ? "bilinear" : r.filter;
  const std::vector<std::string> argv = {python, script, "--samples", dir.path().string(), "--batch-size",
                                         std::to_string(r.batch_size), "--size",
                                         fmt::format("{0}x{0}", r.image_size), "--crop", r.crop, "--filter", filter,
                                         "--seconds", fmt::format("{:g}", r.seconds), "--workers",
                                         std::to_string(r.workers)};
  // Imports and two DataLoader runs: a minute is far beyond what it needs.
  std::optional<BuiltinTurns> turns;
  ChildTick tick;
  if (r.transform && !blobs.empty()) {
    turns.emplace(*r.transform, blobs, std::max(1, r.workers), r.turn_s);
    tick = [&](int group, const ChildResult& so_far) { turns->tick(group, so_far); };
  }
  const ChildResult c = run_child(argv, 60 + 8 * r.seconds, r.stop, tick);
  if (!c.started) {
    throw usage_error(fmt::format("--python {}: no such program", python),
                      "install Debian's python3-torch, or give --python a Python that has torch and PIL");
  }
  if (c.stopped) throw runtime_error("--pytorch-probe was interrupted: no config written");
  if (c.timed_out) throw runtime_error(fmt::format("--pytorch-probe: {} did not answer within {:.0f} s", python, 60 + 8 * r.seconds));
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
  if (turns) reading.costs->builtin_cpu_ms = turns->cpu_ms_per_sample();
  return *reading.costs;
}

}  // namespace gpufeed::cli
