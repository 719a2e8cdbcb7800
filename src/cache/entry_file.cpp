#include "entry_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "hashing.hpp"

namespace gpufeed::loader::cache {
namespace {

constexpr std::string_view kMagic = "GFCACHE1";
// Keys and versions beyond this are not ours (a damaged header).
constexpr std::uint32_t kMaxMetaBytes = 1U << 20;

void put_u32(std::byte* at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::byte>(v >> (8 * i));
}
void put_u64(std::byte* at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<std::byte>(v >> (8 * i));
}
std::uint32_t get_u32(const std::byte* at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::to_integer<std::uint32_t>(at[i]) << (8 * i);
  return v;
}
std::uint64_t get_u64(const std::byte* at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::to_integer<std::uint64_t>(at[i]) << (8 * i);
  return v;
}

// Closes the descriptor on every path out.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  // Closes now and reports the error close(2) gives (NFS reports write
  // errors here).
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

bool read_exact(int fd, std::byte* buffer, std::size_t length, std::uint64_t offset) {
  while (length > 0) {
    const ssize_t n = ::pread(fd, buffer, length, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer += n;
    length -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

bool write_all(int fd, const std::byte* buffer, std::size_t length) {
  while (length > 0) {
    const ssize_t n = ::write(fd, buffer, length);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    buffer += n;
    length -= static_cast<std::size_t>(n);
  }
  return true;
}

// Opens the file, reads and checks the fixed header, the key and version.
struct OpenedEntry {
  EntryHeader header;
  std::string key;
  std::string version;
};
std::optional<OpenedEntry> open_entry(int fd, std::uint64_t file_size, std::string& why) {
  std::array<std::byte, kHeaderBytes> fixed{};
  if (file_size < kHeaderBytes || !read_exact(fd, fixed.data(), fixed.size(), 0)) {
    why = fmt::format("{} bytes, shorter than the entry header", file_size);
    return std::nullopt;
  }
  const auto header = decode_fixed_header(fixed);
  if (!header) {
    why = "not a gpufeed cache entry (bad magic)";
    return std::nullopt;
  }
  if (header->key_bytes > kMaxMetaBytes || header->version_bytes > kMaxMetaBytes ||
      header->file_bytes() != file_size) {
    why = fmt::format("{} bytes on disk, header says {}", file_size, header->file_bytes());
    return std::nullopt;
  }
  std::vector<std::byte> meta(header->key_bytes + header->version_bytes);
  if (!read_exact(fd, meta.data(), meta.size(), kHeaderBytes) || !header_crc_matches(fixed, *header, meta)) {
    why = "header checksum mismatch";
    return std::nullopt;
  }
  const auto* chars = reinterpret_cast<const char*>(meta.data());
  return OpenedEntry{*header, std::string(chars, header->key_bytes),
                     std::string(chars + header->key_bytes, header->version_bytes)};
}

}  // namespace

std::string entry_name(std::uint64_t hash) { return fmt::format("{:016x}{}", hash, kEntrySuffix); }

std::filesystem::path entry_path(const std::filesystem::path& dir, std::uint64_t hash) {
  // 256 subdirectories keep each one small for million-sample datasets.
  return dir / fmt::format("{:02x}", hash >> 56) / entry_name(hash);
}

std::optional<std::uint64_t> parse_entry_name(std::string_view name) {
  if (name.size() != 16 + kEntrySuffix.size() || name.substr(16) != kEntrySuffix) return std::nullopt;
  std::uint64_t hash = 0;
  for (const char c : name.substr(0, 16)) {
    int digit = 0;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    hash = (hash << 4) | static_cast<std::uint64_t>(digit);
  }
  return hash;
}

std::uint64_t entry_file_bytes(const SampleInfo& sample) {
  return kHeaderBytes + sample.key.size() + sample.version.size() + sample.size;
}

std::vector<std::byte> encode_header(const SampleInfo& sample, std::span<const std::byte> data) {
  std::vector<std::byte> out(kHeaderBytes + sample.key.size() + sample.version.size());
  std::memcpy(out.data(), kMagic.data(), kMagic.size());
  put_u32(&out[8], static_cast<std::uint32_t>(sample.key.size()));
  put_u32(&out[12], static_cast<std::uint32_t>(sample.version.size()));
  put_u64(&out[16], data.size());
  put_u32(&out[24], crc32c(data));
  std::memcpy(&out[kHeaderBytes], sample.key.data(), sample.key.size());
  std::memcpy(&out[kHeaderBytes + sample.key.size()], sample.version.data(), sample.version.size());
  const std::uint32_t crc =
      crc32c(std::span(out).subspan(kHeaderBytes), crc32c(std::span(out).first(28)));
  put_u32(&out[28], crc);
  return out;
}

std::optional<EntryHeader> decode_fixed_header(std::span<const std::byte, kHeaderBytes> bytes) {
  if (std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) return std::nullopt;
  EntryHeader h;
  h.key_bytes = get_u32(&bytes[8]);
  h.version_bytes = get_u32(&bytes[12]);
  h.data_bytes = get_u64(&bytes[16]);
  h.data_crc = get_u32(&bytes[24]);
  h.header_crc = get_u32(&bytes[28]);
  return h;
}

bool header_crc_matches(std::span<const std::byte, kHeaderBytes> fixed, const EntryHeader& header,
                        std::span<const std::byte> meta) {
  return crc32c(meta, crc32c(fixed.first(28))) == header.header_crc;
}

EntryRead read_entry(const std::filesystem::path& file, const SampleInfo& sample, std::span<std::byte> data,
                     bool touch) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT) return {EntryStatus::Missing, {}};
    return {EntryStatus::Corrupt, fmt::format("cannot open: {}", std::strerror(err))};
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {EntryStatus::Corrupt, "not a regular file"};
  std::string why;
  const auto entry = open_entry(fd.get(), static_cast<std::uint64_t>(st.st_size), why);
  if (!entry) return {EntryStatus::Corrupt, why};
  if (entry->key != sample.key) return {EntryStatus::Stale, "holds another key"};
  if (entry->version != sample.version || entry->header.data_bytes != sample.size) {
    return {EntryStatus::Stale, fmt::format("holds version '{}' of {} bytes, the listing says '{}' of {} bytes",
                                            entry->version, entry->header.data_bytes, sample.version, sample.size)};
  }
  if (data.size() != sample.size) return {EntryStatus::Stale, "destination does not fit the sample"};
  const std::uint64_t data_offset = kHeaderBytes + entry->header.key_bytes + entry->header.version_bytes;
  if (!read_exact(fd.get(), data.data(), data.size(), data_offset)) return {EntryStatus::Corrupt, "short read"};
  if (crc32c(data) != entry->header.data_crc) return {EntryStatus::Corrupt, "data checksum mismatch"};
  if (touch) {
    const std::array<timespec, 2> times{timespec{0, UTIME_NOW}, timespec{0, UTIME_OMIT}};
    ::futimens(fd.get(), times.data());  // best effort: only the order after a restart depends on it
  }
  return {EntryStatus::Ok, {}};
}

std::optional<ScannedEntry> read_entry_header(const std::filesystem::path& file, std::string& why) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  const auto entry = open_entry(fd.get(), static_cast<std::uint64_t>(st.st_size), why);
  if (!entry) return std::nullopt;
  return ScannedEntry{entry->key, entry->header.data_bytes, entry->header.file_bytes()};
}

std::string write_entry(const std::filesystem::path& file, const std::filesystem::path& temp,
                        const SampleInfo& sample, std::span<const std::byte> data) {
  const auto failed = [&](std::string_view step, int err) {
    ::unlink(temp.c_str());
    return fmt::format("cannot write cache entry {}: {}: {}", file.string(), step, std::strerror(err));
  };
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW;
  Fd fd(::open(temp.c_str(), kFlags, 0644));
  if (fd.get() < 0 && errno == ENOENT) {
    // First entry in this subdirectory.
    if (::mkdir(temp.parent_path().c_str(), 0755) != 0 && errno != EEXIST) {
      return fmt::format("cannot write cache entry {}: mkdir: {}", file.string(), std::strerror(errno));
    }
    fd.reset(::open(temp.c_str(), kFlags, 0644));
  }
  if (fd.get() < 0) {
    return fmt::format("cannot write cache entry {}: create: {}", file.string(), std::strerror(errno));
  }
  const std::vector<std::byte> header = encode_header(sample, data);
  if (!write_all(fd.get(), header.data(), header.size()) || !write_all(fd.get(), data.data(), data.size())) {
    return failed("write", errno);
  }
  // Durable before it becomes visible: after a crash the name holds the
  // whole entry or nothing.
  if (::fsync(fd.get()) != 0) return failed("fsync", errno);
  if (fd.close() != 0) return failed("close", errno);
  if (::rename(temp.c_str(), file.c_str()) != 0) return failed("rename", errno);
  return {};
}

}  // namespace gpufeed::loader::cache
