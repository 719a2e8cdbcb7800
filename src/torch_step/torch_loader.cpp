// open_torch_step(): finds the LibTorch step plugin, dlopen()s it and talks
// to it through plugin_abi.h. Nothing here links LibTorch; the plugin pulls
// it in (hundreds of shared libraries, a third of a second of start-up) only
// when a model is asked for.
#include "gpufeed/torch_step/torch_loader.hpp"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "gpufeed/error.hpp"
#include "gpufeed/loader/step.hpp"
#include "gpufeed/os/dynamic_library.hpp"
#include "plugin_abi.h"
#include "plugin_lookup.hpp"

namespace gpufeed::loader {

namespace torch_step {

std::vector<std::filesystem::path> plugin_candidates(const char* env_override,
                                                     const std::filesystem::path& executable_dir) {
  if (env_override != nullptr && *env_override != '\0') return {env_override};
  if (executable_dir.empty()) return {};
  return {executable_dir / kPluginFile, (executable_dir / ".." / "lib" / "gpufeed" / kPluginFile).lexically_normal()};
}

std::filesystem::path executable_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path{} : exe.parent_path();
}

}  // namespace torch_step

namespace {

constexpr std::size_t kMessageSize = 1024;

struct Plugin {
  std::string path;
  gpufeed_torch_open_fn open = nullptr;
  gpufeed_torch_run_fn run = nullptr;
  gpufeed_torch_describe_fn describe = nullptr;
  gpufeed_torch_close_fn close = nullptr;
};

std::string joined(const std::vector<std::filesystem::path>& paths) {
  std::string out;
  for (const auto& p : paths) out += (out.empty() ? "" : ", ") + p.string();
  return out;
}

Plugin load_plugin_from(const std::filesystem::path& path) {
  // LibTorch starts thread pools and registers static destructors: it cannot
  // be unloaded safely, so it stays mapped.
  os::DynamicLibrary library(path.string(), os::DynamicLibrary::Lifetime::StayMapped);
  if (!library) {
    throw runtime_error(fmt::format("cannot load the LibTorch step plugin {}: {}", path.string(), library.error()),
                        "install LibTorch's run-time libraries (apt-get install libtorch-dev) or rebuild gpufeed");
  }
  Plugin plugin;
  plugin.path = path.string();
  auto version = library.symbol<gpufeed_torch_abi_version_fn>("gpufeed_torch_abi_version");
  plugin.open = library.symbol<gpufeed_torch_open_fn>("gpufeed_torch_open");
  plugin.run = library.symbol<gpufeed_torch_run_fn>("gpufeed_torch_run");
  plugin.describe = library.symbol<gpufeed_torch_describe_fn>("gpufeed_torch_describe");
  plugin.close = library.symbol<gpufeed_torch_close_fn>("gpufeed_torch_close");
  const int abi = version != nullptr ? version() : -1;
  if (abi != GPUFEED_TORCH_PLUGIN_ABI || !plugin.open || !plugin.run || !plugin.describe || !plugin.close) {
    throw runtime_error(fmt::format("{} is not a gpufeed LibTorch step plugin of interface version {} (found {})",
                                    path.string(), GPUFEED_TORCH_PLUGIN_ABI,
                                    abi < 0 ? std::string("none") : std::to_string(abi)),
                        "rebuild gpufeed and its plugin from the same sources");
  }
  library.keep_for_the_process();  // the plugin's functions are used until exit
  return plugin;
}

// Finds and loads the plugin. Not cached: a second dlopen() of the same
// file only returns the same handle, and looking again lets a test (or a
// long-lived caller) see a plugin installed or removed meanwhile.
Plugin find_plugin() {
  const char* override_path = std::getenv(torch_step::kPluginEnv);
  const auto candidates = torch_step::plugin_candidates(override_path, torch_step::executable_dir());
  for (const auto& path : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return load_plugin_from(path);
  }
  if (override_path != nullptr && *override_path != '\0') {
    throw runtime_error(fmt::format("LibTorch step plugin {} (from {}) does not exist", override_path,
                                    torch_step::kPluginEnv),
                        fmt::format("point {} at libgpufeed_torch_step.so, or unset it", torch_step::kPluginEnv));
  }
  throw runtime_error(
      fmt::format("the LibTorch step plugin ({}) was not built or not installed (looked in: {})",
                  torch_step::kPluginFile, candidates.empty() ? "nowhere: /proc/self/exe unreadable" : joined(candidates)),
      fmt::format("install libtorch-dev (apt-get install libtorch-dev), re-run cmake and rebuild, or set {}",
                  torch_step::kPluginEnv));
}

class TorchStep final : public StepRunner {
 public:
  TorchStep(Plugin plugin, gpufeed_torch_step* step, std::string model_path)
      : plugin_(std::move(plugin)), step_(step), model_path_(std::move(model_path)) {}
  ~TorchStep() override { plugin_.close(step_); }
  TorchStep(const TorchStep&) = delete;
  TorchStep& operator=(const TorchStep&) = delete;

  std::string describe() const override {
    std::array<char, kMessageSize> text{};
    plugin_.describe(step_, text.data(), text.size());
    return fmt::format("TorchScript {} ({})",
                       std::filesystem::path(model_path_).filename().string(), text.data());
  }

  void run(const StepInput& batch) override {
    // LibTorch here runs on the CPU: it reads the page-locked host copy,
    // never `device` (which may be GPU memory).
    if (batch.host == nullptr) throw std::invalid_argument("torch step: the batch has no host copy");
    std::vector<std::int64_t> shape = batch.sample_shape;
    if (shape.empty() && batch.batch_size > 0) {
      shape = {static_cast<std::int64_t>(batch.bytes / static_cast<std::size_t>(batch.batch_size))};
    }
    const gpufeed_torch_batch input{reinterpret_cast<const unsigned char*>(batch.host), batch.bytes,
                                    batch.batch_size, shape.data(), static_cast<int>(shape.size())};
    std::array<char, kMessageSize> error{};
    if (plugin_.run(step_, &input, error.data(), error.size()) != 0) {
      throw runtime_error(fmt::format("model {}: training step failed: {}", model_path_, error.data()),
                          "check that the model takes a [batch, C, H, W] (images) or [batch, N] input");
    }
  }

 private:
  Plugin plugin_;
  gpufeed_torch_step* step_;
  std::string model_path_;
};

}  // namespace

std::unique_ptr<StepRunner> open_torch_step(const std::string& model_path) {
  std::error_code ec;
  if (model_path.empty() || !std::filesystem::is_regular_file(model_path, ec)) {
    throw usage_error(fmt::format("model file '{}' does not exist or is not a file", model_path),
                      "pass a TorchScript model saved with torch.jit.save()");
  }
  Plugin p = find_plugin();
  std::array<char, kMessageSize> error{};
  gpufeed_torch_step* step = p.open(model_path.c_str(), error.data(), error.size());
  if (step == nullptr) {
    throw usage_error(fmt::format("cannot load TorchScript model {}: {}", model_path, error.data()),
                      "save the model with torch.jit.script(model).save(PATH) (or torch.jit.trace)");
  }
  return std::make_unique<TorchStep>(std::move(p), step, model_path);
}

}  // namespace gpufeed::loader
