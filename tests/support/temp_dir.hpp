#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace gpufeed::testing {

// A fresh directory under $TMPDIR, removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }
  // Writes `text` to path()/relative, creating parent directories.
  std::filesystem::path write(std::string_view relative, std::string_view text) const;

 private:
  std::filesystem::path path_;
};

std::string read_file(const std::filesystem::path& path);

// `size` reproducible pseudo-random bytes: file and object contents to check.
std::string reproducible_bytes(size_t size, unsigned seed);

}  // namespace gpufeed::testing
