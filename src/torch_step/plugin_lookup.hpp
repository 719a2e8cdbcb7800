#pragma once
// Where open_torch_step() looks for the plugin module, in order. Private to
// src/torch_step; declared here so tests can check the order.
#include <filesystem>
#include <vector>

namespace gpufeed::loader::torch_step {

inline constexpr const char* kPluginFile = "libgpufeed_torch_step.so";
inline constexpr const char* kPluginEnv = "GPUFEED_TORCH_PLUGIN";

// `env_override` ($GPUFEED_TORCH_PLUGIN, may be null or empty) alone when
// set; otherwise next to the running executable (a build tree: build/gpufeed
// beside build/libgpufeed_torch_step.so), then <exe dir>/../lib/gpufeed/ (an
// installed tree: bin/gpufeed, lib/gpufeed/libgpufeed_torch_step.so).
std::vector<std::filesystem::path> plugin_candidates(const char* env_override,
                                                     const std::filesystem::path& executable_dir);

// The running executable's directory (/proc/self/exe); empty if unreadable.
std::filesystem::path executable_dir();

}  // namespace gpufeed::loader::torch_step
