#include "cache_directory.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "entry_file.hpp"
#include "gpufeed/atomic_file.hpp"
#include "gpufeed/error.hpp"
#include "hashing.hpp"

namespace gpufeed::loader::cache {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMarkerText = "gpufeed sample cache, format 1\n";
constexpr const char* kDirHint = "give a writable directory on a local disk, e.g. --cache-dir /mnt/nvme/gpufeed-cache";

bool is_fanout_name(const std::string& name) {
  return name.size() == 2 && std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::int64_t to_ns(const timespec& t) { return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec; }

void check_writable(const fs::path& dir) {
  std::string probe = (dir / (std::string(kTempPrefix) + "probe-XXXXXX")).string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    throw usage_error(fmt::format("cache directory {} is not writable: {}", dir.string(), std::strerror(errno)),
                      kDirHint);
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace

void prepare_cache_directory(const fs::path& dir) {
  std::error_code ec;
  const auto status = fs::status(dir, ec);
  if (fs::exists(status) && !fs::is_directory(status)) {
    throw usage_error(fmt::format("cache directory {} is not a directory", dir.string()), kDirHint);
  }
  if (!fs::exists(status)) {
    if (!fs::create_directories(dir, ec) && ec) {
      throw usage_error(fmt::format("cannot create cache directory {}: {}", dir.string(), ec.message()), kDirHint);
    }
  }
  const fs::path marker = dir / kMarkerName;
  if (std::ifstream in(marker); in) {
    std::string first_line;
    std::getline(in, first_line);
    if (first_line + '\n' != kMarkerText) {
      throw usage_error(fmt::format("cache directory {} holds another cache format ({})", dir.string(), first_line),
                        "remove the directory or give another one");
    }
    check_writable(dir);
    return;
  }
  if (fs::directory_iterator(dir, ec) != fs::directory_iterator()) {
    throw usage_error(fmt::format("cache directory {} is not empty and is not a gpufeed cache", dir.string()),
                      "give an empty or new directory (gpufeed deletes files in its cache directory)");
  }
  if (ec) throw usage_error(fmt::format("cannot read cache directory {}: {}", dir.string(), ec.message()), kDirHint);
  check_writable(dir);
  try {
    write_file_atomically(marker, kMarkerText);
  } catch (const Error& e) {
    throw usage_error(fmt::format("cannot mark cache directory {}: {}", dir.string(), e.what()), kDirHint);
  }
}

ScanResult scan_cache_directory(const fs::path& dir) {
  ScanResult result;
  std::error_code ec;
  for (const auto& sub : fs::directory_iterator(dir, ec)) {
    const std::string sub_name = sub.path().filename().string();
    if (!is_fanout_name(sub_name) || !sub.is_directory(ec) || sub.is_symlink(ec)) continue;
    for (const auto& file : fs::directory_iterator(sub.path(), ec)) {
      const std::string name = file.path().filename().string();
      if (name.rfind(kTempPrefix, 0) == 0) {
        // A write that never reached its rename. (Another process sharing
        // the directory loses its in-flight write; it counts a failure.)
        if (::unlink(file.path().c_str()) == 0) ++result.removed;
        continue;
      }
      const auto hash = parse_entry_name(name);
      if (!hash) continue;  // not ours
      struct stat st {};
      if (::lstat(file.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      std::string why;
      const auto entry = read_entry_header(file.path(), why);
      const bool valid = entry && key_hash(entry->key) == *hash && fmt::format("{:02x}", *hash >> 56) == sub_name;
      if (!valid) {
        if (::unlink(file.path().c_str()) == 0) ++result.removed;
        continue;
      }
      result.entries.push_back(
          {*hash, entry->data_bytes, entry->file_bytes, std::max(to_ns(st.st_atim), to_ns(st.st_mtim))});
    }
  }
  std::sort(result.entries.begin(), result.entries.end(),
            [](const FoundEntry& a, const FoundEntry& b) { return a.last_used_ns < b.last_used_ns; });
  return result;
}

}  // namespace gpufeed::loader::cache
