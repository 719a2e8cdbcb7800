// Local directory or manifest store (local_source.hpp).
#include "gpufeed/loader/local_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "gpufeed/diagnose/mounts.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/text.hpp"
#include "gpufeed/os/stop_signals.hpp"
#include "gpufeed/process_view.hpp"

namespace gpufeed::loader {
namespace {

namespace fs = std::filesystem;

std::string errno_text(int e) { return std::strerror(e); }

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string filesystem_of(const fs::path& path, const fs::path& mountinfo) {
  std::ifstream in(mountinfo);
  if (!in) return "unknown";
  std::stringstream text;
  text << in.rdbuf();
  MountTable table(parse_mountinfo(text.str()));
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(path, ec);
  const Mount* m = table.by_path(ec ? path.string() : canonical.string());
  return m ? m->fs_type : "unknown";
}

class LocalSource final : public SampleSource {
 public:
  LocalSource(LocalOptions options, bool manifest)
      : options_(std::move(options)), manifest_(manifest),
        base_(manifest_ ? options_.path.parent_path() : options_.path),
        fs_type_(filesystem_of(options_.path, options_.mountinfo)) {}

  std::string kind() const override { return "local"; }
  AccessPattern usual_access() const override { return manifest_ ? AccessPattern{0, 0} : AccessPattern{1, 0}; }
  std::string storage_type() const override { return fs_type_; }
  std::string describe() const override {
    return fmt::format("{} {} ({})", manifest_ ? "manifest" : "directory", options_.path.string(), fs_type_);
  }

  std::vector<SampleInfo> list() override {
    std::vector<std::string> keys = manifest_ ? read_manifest() : walk();
    std::vector<SampleInfo> out(keys.size());
    // stat() every file in parallel: on a 47 ms-per-stat mount this is what
    // makes listing take seconds rather than minutes.
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::string failure;
    std::mutex failure_mu;
    auto work = [&] {
      for (std::size_t i; (i = next.fetch_add(1)) < keys.size() && !failed && !os::stop_requested();) {
        struct stat st {};
        const bool stat_failed = ::stat(path_of(keys[i]).c_str(), &st) != 0;
        if (stat_failed || !S_ISREG(st.st_mode)) {
          const std::string why = stat_failed ? errno_text(errno) : "not a regular file";
          std::lock_guard lock(failure_mu);
          if (!failed.exchange(true)) failure = fmt::format("{}: {}", path_of(keys[i]).string(), why);
          return;
        }
        out[i] = {std::move(keys[i]), static_cast<std::uint64_t>(st.st_size),
                  std::to_string(static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec)};
      }
    };
    std::vector<std::thread> threads;
    const int n = std::clamp<int>(options_.list_threads, 1, static_cast<int>(std::max<std::size_t>(keys.size(), 1)));
    for (int t = 0; t < n; ++t) threads.emplace_back(work);
    for (auto& t : threads) t.join();
    if (os::stop_requested()) throw interrupted_listing(keys.size());
    if (failed) {
      throw usage_error(fmt::format("cannot list the dataset: {}", failure),
                        manifest_ ? "fix or remove that line of the manifest" : "check the dataset's permissions");
    }
    return out;
  }

  void stat(const SampleInfo& s) override {
    struct stat st {};
    if (::stat(path_of(s.key).c_str(), &st) != 0) throw sample_error(s, "stat", errno);
  }

  void open(const SampleInfo& s) override {
    FileDescriptor fd(::open(path_of(s.key).c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) throw sample_error(s, "open", errno);
  }

  void read(const SampleInfo& s, std::vector<std::byte>& out) override {
    FileDescriptor fd(::open(path_of(s.key).c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) throw sample_error(s, "open", errno);
    // Like Python's open(path, "rb").read(), which a PyTorch Dataset does:
    // open, fstat twice (Python's buffered open, then readall sizing its
    // buffer), read to EOF. On FUSE or NFS each fstat is a round trip of its
    // own, so the loader pays what the job pays.
    // Python asks for one byte more than the size and reads until read(2)
    // returns 0: the usual file costs two reads, and on FUSE with no
    // attribute cache each read past the size refreshes the attributes, a
    // GETATTR round trip: skipping the empty read made the loader 10-15%
    // faster per sample than the job on the incident's FUSE.
    out.resize(std::max<std::uint64_t>(current_size(fd.get(), s) + 1, 4096));
    std::size_t used = 0;
    for (;;) {
      if (used == out.size()) out.resize(out.size() * 2);
      const std::size_t n = read_some(fd.get(), s, out.data() + used, out.size() - used);
      if (n == 0) break;  // EOF
      used += n;
    }
    out.resize(used);
  }

  std::size_t read_into(const SampleInfo& s, std::span<std::byte> out) override {
    FileDescriptor fd(::open(path_of(s.key).c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) throw sample_error(s, "open", errno);
    current_size(fd.get(), s);  // the same round trips as read() and Python
    std::size_t used = 0;
    while (used < out.size()) {
      const std::size_t n = read_some(fd.get(), s, out.data() + used, out.size() - used);
      if (n == 0) return used;  // EOF, seen as Python sees it (see read())
      used += n;
    }
    return used;  // the slot is full: what follows is not read
  }

 private:
  fs::path path_of(const std::string& key) const { return fs::path(key).is_absolute() ? fs::path(key) : base_ / key; }

  std::uint64_t current_size(int fd, const SampleInfo& s) const {
    struct stat st {};
    for (int i = 0; i < 2; ++i) {  // as Python does (see read())
      if (::fstat(fd, &st) != 0) throw sample_error(s, "fstat", errno);
    }
    return static_cast<std::uint64_t>(st.st_size);
  }

  // One read(2), retried on EINTR; 0 at EOF.
  std::size_t read_some(int fd, const SampleInfo& s, std::byte* into, std::size_t bytes) const {
    for (;;) {
      const ssize_t n = ::read(fd, into, bytes);
      if (n >= 0) return static_cast<std::size_t>(n);
      if (errno != EINTR) throw sample_error(s, "read", errno);
    }
  }

  SampleError sample_error(const SampleInfo& s, const char* op, int e) const {
    return SampleError(s.key, fmt::format("cannot {} sample {}: {}", op, path_of(s.key).string(), errno_text(e)),
                       "fix or remove the file, or pass --skip-bad to count and skip bad samples");
  }

  // Ctrl-C while listing: a slow mount can take minutes, and nothing has
  // been measured yet.
  Error interrupted_listing(std::size_t files) const {
    return runtime_error(fmt::format("interrupted while listing {} ({} files so far): nothing measured",
                                     options_.path.string(), files));
  }

  std::vector<std::string> walk() const {
    std::vector<std::string> keys;
    std::error_code ec;
    fs::recursive_directory_iterator it(options_.path, fs::directory_options::skip_permission_denied, ec);
    if (ec) throw usage_error(fmt::format("cannot read the dataset directory {}: {}", options_.path.string(), ec.message()));
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (os::stop_requested()) throw interrupted_listing(keys.size());
      if (ec) throw runtime_error(fmt::format("cannot walk {}: {}", options_.path.string(), ec.message()));
      const auto name = it->path().filename().string();
      if (!name.empty() && name[0] == '.') {  // hidden files and directories are not samples
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      // d_type from readdir, and the key cut from the path as text: no stat
      // per entry here. fs::relative() canonicalised both paths for every
      // file, several lookups each, one file at a time: listing 400 files on
      // the incident's FUSE store took 26 s before the parallel stats began.
      if (it->is_regular_file(ec)) keys.push_back(it->path().lexically_relative(options_.path).string());
    }
    std::sort(keys.begin(), keys.end());
    return keys;
  }

  std::vector<std::string> read_manifest() const {
    std::ifstream in(options_.path);
    if (!in) throw usage_error(fmt::format("cannot read the manifest {}", options_.path.string()));
    std::vector<std::string> keys;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
      const auto first = line.find_first_not_of(" \t");
      if (first == std::string::npos || line[first] == '#') continue;
      line.erase(0, first);
      if (line.find('\0') != std::string::npos) {
        throw usage_error(fmt::format("the manifest {} has binary data on line {}", options_.path.string(), number),
                          "--data takes a directory or a text file listing one sample path per line");
      }
      keys.push_back(line);
    }
    return keys;
  }

  LocalOptions options_;
  bool manifest_;
  fs::path base_;
  std::string fs_type_;
};

}  // namespace

std::unique_ptr<SampleSource> open_local_source(const LocalOptions& options) {
  std::error_code ec;
  const auto status = fs::status(options.path, ec);
  if (ec || !fs::exists(status)) {
    throw usage_error(fmt::format("--data {}: no such file or directory", options.path.string()),
                      "give a dataset directory, a manifest file, s3://bucket/prefix or synthetic:PRESET");
  }
  if (fs::is_directory(status)) return std::make_unique<LocalSource>(options, false);
  if (fs::is_regular_file(status)) return std::make_unique<LocalSource>(options, true);
  throw usage_error(fmt::format("--data {} is neither a directory nor a manifest file", printable(options.path.string())),
                    "give a dataset directory, or a file that lists one sample path per line");
}

}  // namespace gpufeed::loader
