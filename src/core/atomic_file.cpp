#include "gpufeed/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "gpufeed/error.hpp"

namespace gpufeed {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

// Removes the temporary file unless the rename took it over.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  std::string& path() { return path_; }
  int& fd() { return fd_; }
  void commit() { committed_ = true; }

 private:
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

void check_output_path(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      throw usage_error(fmt::format("output {} is a symbolic link; gpufeed does not write through links",
                                    path.string()),
                        "give the path of the file itself");
    }
    if (S_ISDIR(st.st_mode)) {
      throw usage_error(fmt::format("output {} is a directory", path.string()), "give a file name");
    }
  }
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw runtime_error(fmt::format("cannot write {}: directory {} does not exist", path.string(), dir.string()),
                        "create it first or choose another path");
  }
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  check_output_path(path);
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  TempFile tmp((dir / ("." + path.filename().string() + ".tmp.XXXXXX")).string());
  tmp.fd() = ::mkstemp(tmp.path().data());  // O_EXCL: never an existing file or link
  if (tmp.fd() < 0) {
    const int err = errno;
    tmp.commit();  // nothing was created
    throw runtime_error(fmt::format("cannot create a file in {}: {}", dir.string(), errno_text(err)),
                        "check that the directory exists and is writable");
  }
  // mkstemp makes 0600; give the file the mode a plain create would.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(tmp.fd(), 0666 & ~mask);

  size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(tmp.fd(), content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw runtime_error(fmt::format("cannot write {}: {}", path.string(), errno_text(errno)),
                          "check the free space and permissions of its directory");
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(tmp.fd()) != 0 || ::close(tmp.fd()) != 0) {
    tmp.fd() = -1;
    throw runtime_error(fmt::format("cannot write {}: {}", path.string(), errno_text(errno)),
                        "check the free space and permissions of its directory");
  }
  tmp.fd() = -1;
  if (::rename(tmp.path().c_str(), path.c_str()) != 0) {
    throw runtime_error(fmt::format("cannot replace {}: {}", path.string(), errno_text(errno)),
                        "check the permissions of its directory");
  }
  tmp.commit();
}

}  // namespace gpufeed
