#pragma once
// Input files: one policy for every file a user names for gpufeed to read
// (--config, --from, --profile, --topology, --gpu-trace, a GPU trace, a
// manifest). Only a regular file (or a link to one) is read: a directory, a
// FIFO or a device is refused at once, never read until it ends or blocks.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace gpufeed {

// What the input is, for messages ("the config", "GPU trace"), and what to
// do when it is wrong.
struct InputRole {
  std::string_view what;
  std::string_view hint;
};

// Usage error (exit 2) naming the file unless it is a readable regular file.
void check_input_file(const std::filesystem::path& path, const InputRole& role);

// The whole file, read under the same checks; files over `max_bytes` are
// refused rather than read into memory.
std::string read_input_file(const std::filesystem::path& path, const InputRole& role,
                            std::uint64_t max_bytes = std::uint64_t{1} << 30);

}  // namespace gpufeed
