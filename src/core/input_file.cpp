#include "gpufeed/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "gpufeed/error.hpp"
#include "gpufeed/text.hpp"
#include "gpufeed/units.hpp"

namespace gpufeed {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

Error bad_input(const std::filesystem::path& path, const InputRole& role, const std::string& problem) {
  return usage_error(fmt::format("{} {} {}", role.what, printable(path.string()), problem), std::string(role.hint));
}

// Opens without blocking (a FIFO that slipped past the check would wait for
// a writer) and checks what was opened, not what the name pointed to before.
int open_regular(const std::filesystem::path& path, const InputRole& role, struct stat& st) {
  if (path.empty()) throw usage_error(fmt::format("the path of {} is empty", role.what), std::string(role.hint));
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) throw bad_input(path, role, "is a dangling symbolic link");
    throw bad_input(path, role, err == ENOENT ? "does not exist" : fmt::format("cannot be read: {}", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) throw bad_input(path, role, "is " + kind_of(st.st_mode) + ", not a file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw bad_input(path, role, fmt::format("cannot be read: {}", std::strerror(errno)));
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw bad_input(path, role, "is not a file");
  }
  return fd;
}

}  // namespace

void check_input_file(const std::filesystem::path& path, const InputRole& role) {
  struct stat st {};
  ::close(open_regular(path, role, st));
}

std::string read_input_file(const std::filesystem::path& path, const InputRole& role, std::uint64_t max_bytes) {
  struct stat st {};
  const int fd = open_regular(path, role, st);
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw bad_input(path, role, fmt::format("is {}, more than the {} gpufeed reads",
                                            format_bytes(static_cast<std::uint64_t>(st.st_size)), format_bytes(max_bytes)));
  }
  std::string text;
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw runtime_error(fmt::format("cannot read {} {}: {}", role.what, printable(path.string()), std::strerror(err)));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) {  // it grew while it was read
      ::close(fd);
      throw bad_input(path, role, fmt::format("grew past the {} gpufeed reads", format_bytes(max_bytes)));
    }
  }
  ::close(fd);
  return text;
}

}  // namespace gpufeed
