#pragma once
// Mounts tests/fixtures/latencyfs (a read-only FUSE passthrough that sleeps in
// chosen operations) for the lifetime of one object.
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

namespace gpufeed::testing {

struct LatencyFsOptions {
  double lookup_ms = 0, open_ms = 0, read_ms = 0, getattr_ms = 0, readdir_ms = 0, sigma = 0;
  double cpu_ms = 0;  // CPU the daemon spends in each delayed operation
  int threads = 64;
  unsigned seed = 1;
};

class LatencyFsMount {
 public:
  // Why this machine cannot mount the fixture (no /dev/fuse, not root, binary
  // missing), or nullopt. Tests do: if (auto why = ...) GTEST_SKIP() << *why;
  static std::optional<std::string> unavailable_reason();

  // Starts the fixture and waits (at most 10 s) until `mountpoint` shows up in
  // /proc/self/mountinfo as fuse.latencyfs; throws std::runtime_error with the
  // fixture's stderr otherwise. The fixture gets SIGTERM if the thread that
  // constructed this object dies, so a crashed test does not leave a mount.
  LatencyFsMount(std::filesystem::path source, std::filesystem::path mountpoint, LatencyFsOptions options);
  // Unmounts and reaps the fixture; bounded (SIGKILL as a last resort).
  ~LatencyFsMount();
  LatencyFsMount(const LatencyFsMount&) = delete;
  LatencyFsMount& operator=(const LatencyFsMount&) = delete;

  const std::filesystem::path& path() const { return mountpoint_; }
  pid_t pid() const { return pid_; }
  // What the fixture wrote to stdout/stderr so far.
  std::string output() const;
  // Unmounts and reaps the fixture now; returns all it wrote, the counts of
  // operations it served on exit included ("gpufeed-latencyfs: served ...").
  std::string unmount();

 private:
  void stop() noexcept;

  std::filesystem::path mountpoint_;
  pid_t pid_ = -1;
  int output_fd_ = -1;
};

// True when /proc/self/mountinfo lists `mountpoint` (compared canonically)
// with file system type `fstype`.
bool is_mounted(const std::filesystem::path& mountpoint, const std::string& fstype = "fuse.latencyfs");

}  // namespace gpufeed::testing
