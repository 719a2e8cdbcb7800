#include "support/latencyfs_mount.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gpufeed::testing {
namespace {

using Clock = std::chrono::steady_clock;

#ifdef GPUFEED_LATENCYFS
constexpr const char* kBinary = GPUFEED_LATENCYFS;
#else
constexpr const char* kBinary = "";
#endif

// Undoes the octal escapes (\040 for a space, ...) of /proc/self/mountinfo.
std::string unescape_mountinfo(const std::string& field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    auto octal = [&](size_t k) { return k < field.size() && field[k] >= '0' && field[k] <= '7'; };
    if (field[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out.push_back(static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 + (field[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(field[i]);
    }
  }
  return out;
}

// The canonical form of `path` without touching `path` itself: it may be a
// mount whose server is slow or gone.
std::filesystem::path canonical_without_stat(const std::filesystem::path& path) {
  auto absolute = std::filesystem::absolute(path).lexically_normal();
  if (!absolute.has_filename()) absolute = absolute.parent_path();
  std::error_code ec;
  auto parent = std::filesystem::weakly_canonical(absolute.parent_path(), ec);
  if (ec) return absolute;
  return parent / absolute.filename();
}

// waitpid with a deadline; true when the child was reaped.
bool wait_for_exit(pid_t pid, std::chrono::milliseconds limit, int* status) {
  auto deadline = Clock::now() + limit;
  while (true) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;  // not our child any more
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string format_ms(double ms) {
  std::ostringstream text;
  text.precision(17);
  text << ms;
  return text.str();
}

}  // namespace

bool is_mounted(const std::filesystem::path& mountpoint, const std::string& fstype) {
  const std::string want = canonical_without_stat(mountpoint).string();
  std::ifstream info("/proc/self/mountinfo");
  std::string line;
  while (std::getline(info, line)) {
    // id parent major:minor root mountpoint options [optional...] - fstype source superoptions
    std::istringstream fields(line);
    std::string id, parent, dev, root, point, field;
    fields >> id >> parent >> dev >> root >> point;
    while (fields >> field && field != "-") {
    }
    std::string type;
    fields >> type;
    if (type == fstype && unescape_mountinfo(point) == want) return true;
  }
  return false;
}

std::optional<std::string> LatencyFsMount::unavailable_reason() {
  if (std::strlen(kBinary) == 0) return "built without the latencyfs fixture (GPUFEED_LATENCYFS undefined)";
  if (access(kBinary, X_OK) != 0)
    return std::string("latencyfs fixture not built: ") + kBinary + ": " + std::strerror(errno);
  if (geteuid() != 0) return "mounting the latencyfs fixture needs root (euid " + std::to_string(geteuid()) + ")";
  int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fd < 0) return std::string("/dev/fuse unusable: ") + std::strerror(errno);
  close(fd);
  return std::nullopt;
}

LatencyFsMount::LatencyFsMount(std::filesystem::path source, std::filesystem::path mountpoint,
                               LatencyFsOptions options) {
  std::filesystem::create_directories(mountpoint);
  mountpoint_ = std::filesystem::canonical(mountpoint);
  if (is_mounted(mountpoint_)) throw std::runtime_error("latencyfs already mounted at " + mountpoint_.string());

  std::vector<std::string> args = {kBinary,
                                   source.string(),
                                   mountpoint_.string(),
                                   "--lookup-ms",
                                   format_ms(options.lookup_ms),
                                   "--open-ms",
                                   format_ms(options.open_ms),
                                   "--read-ms",
                                   format_ms(options.read_ms),
                                   "--getattr-ms",
                                   format_ms(options.getattr_ms),
                                   "--readdir-ms",
                                   format_ms(options.readdir_ms),
                                   "--sigma",
                                   format_ms(options.sigma),
                                   "--cpu-ms",
                                   format_ms(options.cpu_ms),
                                   "--seed",
                                   std::to_string(options.seed),
                                   "--threads",
                                   std::to_string(options.threads)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  output_fd_ = memfd_create("latencyfs-output", MFD_CLOEXEC);
  if (output_fd_ < 0) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = getpid();

  // Only async-signal-safe calls between fork and exec: the test process may
  // have threads.
  pid_ = fork();
  if (pid_ < 0) {
    int err = errno;
    if (null_fd >= 0) close(null_fd);
    close(output_fd_);
    output_fd_ = -1;
    throw std::runtime_error(std::string("fork: ") + std::strerror(err));
  }
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(output_fd_, STDOUT_FILENO);
    dup2(output_fd_, STDERR_FILENO);
    execv(argv[0], argv.data());
    const char msg[] = "latencyfs_mount: execv failed\n";
    [[maybe_unused]] auto ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(127);
  }
  if (null_fd >= 0) close(null_fd);

  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!is_mounted(mountpoint_)) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      std::string why = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                          : "killed by signal " + std::to_string(WTERMSIG(status));
      std::string out = output();
      close(output_fd_);
      output_fd_ = -1;
      throw std::runtime_error("latencyfs " + why + " before mounting " + mountpoint_.string() + ": " + out);
    }
    if (Clock::now() >= deadline) {
      std::string out = output();
      stop();
      close(output_fd_);
      output_fd_ = -1;
      throw std::runtime_error("latencyfs did not mount " + mountpoint_.string() + " within 10 s: " + out);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

LatencyFsMount::~LatencyFsMount() {
  stop();
  if (output_fd_ >= 0) close(output_fd_);
}

std::string LatencyFsMount::unmount() {
  stop();
  return output();
}

std::string LatencyFsMount::output() const {
  if (output_fd_ < 0) return {};
  std::string text;
  char buf[4096];
  off_t offset = 0;
  while (true) {
    ssize_t n = pread(output_fd_, buf, sizeof buf, offset);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    offset += n;
  }
  return text;
}

void LatencyFsMount::stop() noexcept {
  if (pid_ > 0) {
    // Unmounting first lets the fixture's session loop end on its own (the
    // kernel closes the connection); a lazy unmount never blocks on users.
    if (is_mounted(mountpoint_)) umount2(mountpoint_.c_str(), MNT_DETACH);
    int status = 0;
    if (!wait_for_exit(pid_, std::chrono::milliseconds(2000), &status)) {
      kill(pid_, SIGTERM);
      if (!wait_for_exit(pid_, std::chrono::milliseconds(3000), &status)) {
        kill(pid_, SIGKILL);
        wait_for_exit(pid_, std::chrono::milliseconds(2000), &status);
      }
    }
    pid_ = -1;
    // A killed fixture leaves its mount behind (reads fail with ENOTCONN).
    if (is_mounted(mountpoint_)) umount2(mountpoint_.c_str(), MNT_DETACH);
  }
}

}  // namespace gpufeed::testing
