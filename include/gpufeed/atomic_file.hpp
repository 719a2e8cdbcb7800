#pragma once
#include <filesystem>
#include <string_view>

namespace gpufeed {

// Writes `content` to `path` so that readers see the old file or the whole
// new one, never a part: a temporary file in the same directory, fsync, then
// rename over the target. Refuses (usage error) when `path` is a symlink or a
// directory, so gpufeed never writes through a link it did not create.
// Throws gpufeed::Error naming the path.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

// The same checks, made before a long run so that it fails at once rather
// than after the work: not a link, not a directory, and the directory exists.
void check_output_path(const std::filesystem::path& path);

}  // namespace gpufeed
