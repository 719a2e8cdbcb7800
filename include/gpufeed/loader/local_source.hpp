#pragma once
// Local files: a directory tree (ImageFolder-like: every regular file below
// the root, in sorted order) or a manifest (a text file with one path per
// line, relative to the manifest's directory or absolute; '#' comments).
#include <filesystem>
#include <memory>

#include "gpufeed/loader/sample_source.hpp"

namespace gpufeed::loader {

struct LocalOptions {
  std::filesystem::path path;  // directory or manifest
  int list_threads = 32;       // parallel stat() while listing: slow mounts list in seconds, not minutes
  std::filesystem::path mountinfo = "/proc/self/mountinfo";  // where the filesystem type comes from
};

// Usage error when the path does not exist or is neither a directory nor a
// readable file.
std::unique_ptr<SampleSource> open_local_source(const LocalOptions& options);

}  // namespace gpufeed::loader
