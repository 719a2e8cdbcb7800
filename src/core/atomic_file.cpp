#include "gpufeed/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
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

std::filesystem::path directory_of(const std::filesystem::path& path) {
  return path.has_parent_path() ? path.parent_path() : ".";
}

// /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N name a descriptor
// this process already holds: it is written as it is, wherever it points (a
// terminal, a pipe, or the file a shell redirected it to).
std::optional<int> named_descriptor(const std::filesystem::path& path) {
  const std::string text = path.string();
  if (text == "/dev/stdout") return STDOUT_FILENO;
  if (text == "/dev/stderr") return STDERR_FILENO;
  for (const std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (text.rfind(prefix, 0) != 0) continue;
    int fd = -1;
    const char* first = text.data() + prefix.size();
    const char* last = text.data() + text.size();
    const auto [end, ec] = std::from_chars(first, last, fd);
    if (ec == std::errc() && end == last && fd >= 0 && ::fcntl(fd, F_GETFD) != -1) return fd;
  }
  return std::nullopt;
}

bool is_stream(mode_t mode) { return S_ISCHR(mode) || S_ISFIFO(mode); }

std::string kind_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

Error not_writable(const std::filesystem::path& path, mode_t mode) {
  return usage_error(fmt::format("output {} is {}", path.string(), kind_name(mode)),
                     "give a file name (gpufeed writes regular files, and character devices or FIFOs such as "
                     "/dev/null in place)");
}

// Proves the directory takes a new file: the rename at the end needs one.
void check_directory_writable(const std::filesystem::path& path) {
  const std::filesystem::path dir = directory_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw runtime_error(fmt::format("cannot write {}: directory {} does not exist", path.string(), dir.string()),
                        "create it first or choose another path");
  }
  std::string probe = (dir / ".gpufeed-write-check.XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    throw usage_error(fmt::format("cannot write {}: directory {} takes no new file ({})", path.string(), dir.string(),
                                  errno_text(errno)),
                      "choose a directory you can write to");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

void write_all(int fd, std::string_view content, const std::filesystem::path& path) {
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw runtime_error(fmt::format("cannot write {}: {}", path.string(), errno_text(errno)),
                          "check the free space and permissions of its directory");
    }
    written += static_cast<std::size_t>(n);
  }
}

void write_stream(const std::filesystem::path& path, std::string_view content) {
  if (const auto fd = named_descriptor(path)) {
    write_all(*fd, content, path);
    return;
  }
  // No O_CREAT and no O_TRUNC: a device or FIFO is written, never made or replaced.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) throw runtime_error(fmt::format("cannot open {}: {}", path.string(), errno_text(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !is_stream(st.st_mode)) {  // replaced since the check
    ::close(fd);
    throw not_writable(path, st.st_mode);
  }
  try {
    write_all(fd, content, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

// What the path is, under the policy; no file is created.
OutputKind classify_output(const std::filesystem::path& path) {
  if (path.empty()) throw usage_error("an output path is empty", "give a file name, or '-' where stdout is meant");
  if (named_descriptor(path)) return OutputKind::Stream;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      struct stat target {};
      if (::stat(path.c_str(), &target) == 0 && is_stream(target.st_mode)) return OutputKind::Stream;
      throw usage_error(fmt::format("output {} is a symbolic link; gpufeed does not write through links",
                                    path.string()),
                        "give the path of the file itself");
    }
    if (is_stream(st.st_mode)) return OutputKind::Stream;
    if (!S_ISREG(st.st_mode)) throw not_writable(path, st.st_mode);
  }
  return OutputKind::File;
}

// The temporary file, fsync and rename; its own mkstemp proves the directory.
void replace_regular_file(const std::filesystem::path& path, std::string_view content) {
  const std::filesystem::path dir = directory_of(path);
  std::string name = ".";  // appended piece by piece: GCC 12 -O3 warns falsely on "." + s + "..."
  name += path.filename().string();
  name += ".tmp.XXXXXX";
  TempFile tmp((dir / name).string());
  tmp.fd() = ::mkstemp(tmp.path().data());  // O_EXCL: never an existing file or link
  if (tmp.fd() < 0) {
    const int err = errno;
    tmp.commit();  // nothing was created
    if (err == ENOENT) {
      throw runtime_error(fmt::format("cannot write {}: directory {} does not exist", path.string(), dir.string()),
                          "create it first or choose another path");
    }
    throw runtime_error(fmt::format("cannot create a file in {}: {}", dir.string(), errno_text(err)),
                        "check that the directory exists and is writable");
  }
  // mkstemp makes 0600; give the file the mode a plain create would.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(tmp.fd(), 0666 & ~mask);

  write_all(tmp.fd(), content, path);
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

}  // namespace

OutputKind check_output_path(const std::filesystem::path& path) {
  const OutputKind kind = classify_output(path);
  if (kind == OutputKind::File) check_directory_writable(path);
  return kind;
}

void write_output(const std::filesystem::path& path, std::string_view content) {
  if (classify_output(path) == OutputKind::Stream) {
    write_stream(path, content);
  } else {
    replace_regular_file(path, content);
  }
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  if (classify_output(path) == OutputKind::Stream) {
    struct stat st {};
    ::stat(path.c_str(), &st);
    throw not_writable(path, st.st_mode);
  }
  replace_regular_file(path, content);
}

bool same_output_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  struct stat sa {}, sb {};
  const bool a_exists = ::stat(a.c_str(), &sa) == 0, b_exists = ::stat(b.c_str(), &sb) == 0;
  if (a_exists && b_exists) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino && S_ISREG(sa.st_mode);
  if (a_exists != b_exists) return false;
  std::error_code ec;
  const auto ca = std::filesystem::weakly_canonical(a, ec);
  const auto cb = std::filesystem::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

}  // namespace gpufeed
