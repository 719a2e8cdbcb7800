#pragma once
// Output files: one policy for every path a user names for gpufeed to write
// (--json, --trace, --out; docs/json.md#output-files).
#include <filesystem>
#include <string_view>

namespace gpufeed {

// How an output path is written.
enum class OutputKind {
  File,    // a new or existing regular file: replaced atomically
  Stream,  // a character device or FIFO (/dev/null, a pipe, /dev/stdout): written in place, never replaced
};

// Checks an output path before a long run, so that it fails at once rather
// than after the work. Usage errors (exit 2): an empty path; a symbolic link
// to anything but a character device or FIFO (gpufeed never replaces a file
// through a link); a directory, block device or socket; a directory gpufeed
// cannot create a file in. Runtime error (exit 1): the directory does not
// exist.
OutputKind check_output_path(const std::filesystem::path& path);

// Writes `content` to an output path under the policy above: a stream is
// written directly (so `/dev/null` stays the device it is); a file is written
// to a temporary file in the same directory, fsynced and renamed over the
// target, so readers see the old file or the whole new one, never a part.
// Throws gpufeed::Error naming the path.
void write_output(const std::filesystem::path& path, std::string_view content);

// The regular-file half of write_output, for files gpufeed owns (cache
// markers): refuses anything but a regular file or a new path.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

// True when two output paths would write the same regular file (the same
// name, or two names of one file); streams never collide.
bool same_output_file(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace gpufeed
