// The SSD tier on real directories: its on-disk layout, crash safety,
// validation, restarts, and a cache directory that cannot be written.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

#include "cache_test_source.hpp"
#include "entry_file.hpp"
#include "gpufeed/cache/cache.hpp"
#include "hashing.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed::loader {
namespace {

namespace fs = std::filesystem;
using testing::Bytes;
using testing::expected_bytes;
using testing::FakeSource;

constexpr std::uint64_t kMiB = 1 << 20;

std::vector<fs::path> entry_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".gfc") files.push_back(e.path());
  }
  return files;
}

std::vector<fs::path> temp_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename().string().rfind(".tmp", 0) == 0) files.push_back(e.path());
  }
  return files;
}

fs::path entry_of(const fs::path& dir, const SampleInfo& s) { return cache::entry_path(dir, cache::key_hash(s.key)); }

// One SSD cache over a fake store, reopened at will like a restarted job.
class SsdCacheTest : public ::testing::Test {
 protected:
  fs::path dir() const { return tmp_ / "cache"; }

  void open(std::uint64_t budget = kMiB, int count = 10, std::uint64_t size = 5000) {
    cache_.reset();
    auto fake = std::make_unique<FakeSource>(count, size);
    fake_ = fake.get();
    cache_ = make_ssd_cache(std::move(fake), dir(), budget);
  }

  void read(int i) {
    const SampleInfo s = fake_->sample(i);
    Bytes out;
    cache_->read(s, out);
    EXPECT_EQ(out, expected_bytes(s)) << "sample " << i;
  }

  CacheHealth health() const { return cache_->health().at(0); }
  TierStats stats() const { return cache_->tier_stats().at(0); }

  ::gpufeed::testing::TempDir tmp_;
  FakeSource* fake_ = nullptr;
  std::unique_ptr<CacheTier> cache_;
};

TEST_F(SsdCacheTest, EntriesAreHashedFilesInFanoutDirectories) {
  open();
  for (int i = 0; i < 10; ++i) read(i);
  const auto files = entry_files(dir());
  ASSERT_EQ(files.size(), 10U);
  const auto is_entry_name = [](const std::string& name) {
    return name.size() == 20 && name.substr(16) == ".gfc" &&
           name.find_first_not_of("0123456789abcdef") == 16;
  };
  for (const auto& f : files) {
    EXPECT_TRUE(is_entry_name(f.filename().string())) << f;
    EXPECT_EQ(f.parent_path().parent_path(), dir()) << f;
    EXPECT_EQ(f.parent_path().filename().string(), f.filename().string().substr(0, 2)) << f;
  }
  EXPECT_TRUE(fs::exists(dir() / "GPUFEED-CACHE"));
  EXPECT_TRUE(temp_files(dir()).empty());
  // The budget counts entry files as they are on disk.
  std::uint64_t on_disk = 0;
  for (const auto& f : files) on_disk += fs::file_size(f);
  EXPECT_EQ(stats().bytes_cached, on_disk);
}

TEST_F(SsdCacheTest, ARestartKeepsTheEntriesAndHits) {
  open();
  for (int i = 0; i < 10; ++i) read(i);
  const std::uint64_t bytes = stats().bytes_cached;
  open();  // a new process: empty index, fresh store counters
  EXPECT_EQ(stats().bytes_cached, bytes);
  EXPECT_EQ(health().entries, 10U);
  for (int i = 0; i < 10; ++i) read(i);
  EXPECT_EQ(fake_->reads.load(), 0);
  EXPECT_EQ(stats().hits, 10U);
}

TEST_F(SsdCacheTest, ARestartEvictsTheLeastRecentlyUsedFirst) {
  open();
  for (int i = 0; i < 3; ++i) read(i);
  // Last use: sample 0 a minute ago, 1 five minutes ago, 2 three minutes ago.
  const auto now = std::chrono::system_clock::now();
  for (const auto& [i, ago] : {std::pair{0, 60}, {1, 300}, {2, 180}}) {
    const auto t = std::chrono::duration_cast<std::chrono::seconds>((now - std::chrono::seconds(ago)).time_since_epoch());
    const timespec times[2] = {{t.count(), 0}, {t.count(), 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, entry_of(dir(), fake_->sample(i)).c_str(), times, 0), 0);
  }
  const std::uint64_t entry_bytes = fs::file_size(entry_of(dir(), fake_->sample(0)));
  open(2 * entry_bytes);  // the budget shrank: one entry must go
  EXPECT_EQ(stats().evictions, 1U);
  EXPECT_FALSE(fs::exists(entry_of(dir(), fake_->sample(1))));
  EXPECT_TRUE(fs::exists(entry_of(dir(), fake_->sample(0))));
  EXPECT_TRUE(fs::exists(entry_of(dir(), fake_->sample(2))));
}

TEST_F(SsdCacheTest, AHitRecordsItsUseForTheNextRestart) {
  open();
  read(0);
  const fs::path file = entry_of(dir(), fake_->sample(0));
  const timespec old_times[2] = {{1'000'000'000, 0}, {1'000'000'000, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, file.c_str(), old_times, 0), 0);
  open();
  read(0);  // the first hit after a restart writes the atime
  struct stat st {};
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_GT(st.st_atim.tv_sec, 1'000'000'000 + 86400);
}

TEST_F(SsdCacheTest, LeftoverTempFilesAndTornEntriesAreRemovedAtOpen) {
  open();
  read(0);
  const fs::path good = entry_of(dir(), fake_->sample(0));
  const SampleInfo torn = fake_->sample(1);
  cache_.reset();  // the fake goes with it
  // A crash between create and rename leaves a temp file...
  std::ofstream(good.parent_path() / ".tmp-0123456789abcdef-99-1") << "half an entry";
  // ...and a writer without the rename protocol would leave a torn entry:
  // a valid header whose data is cut short.
  const Bytes data = expected_bytes(torn);
  fs::create_directories(entry_of(dir(), torn).parent_path());
  {
    const std::vector<std::byte> header = cache::encode_header(torn, data);
    std::ofstream out(entry_of(dir(), torn), std::ios::binary);
    out.write(reinterpret_cast<const char*>(header.data()), static_cast<std::streamsize>(header.size()));
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size() / 2));
  }
  // A file that is not ours stays.
  std::ofstream(dir() / "README") << "not a cache entry";

  open();
  EXPECT_EQ(health().removed_at_open, 2U);
  EXPECT_TRUE(temp_files(dir()).empty());
  EXPECT_FALSE(fs::exists(entry_of(dir(), torn)));
  EXPECT_TRUE(fs::exists(dir() / "README"));
  read(1);  // from the store, never the torn bytes
  EXPECT_EQ(fake_->reads.load(), 1);
  read(0);
  EXPECT_EQ(fake_->reads.load(), 1) << "the good entry survives";
}

TEST_F(SsdCacheTest, AnEntryTruncatedOnDiskIsRefetched) {
  open();
  read(0);
  const fs::path file = entry_of(dir(), fake_->sample(0));
  fs::resize_file(file, fs::file_size(file) - 100);
  read(0);  // checks the bytes: the store's, not the short file's
  EXPECT_EQ(fake_->reads.load(), 2);
  EXPECT_EQ(health().corrupt, 1U);
  read(0);
  EXPECT_EQ(fake_->reads.load(), 2) << "the refetch should have rewritten the entry";
}

TEST_F(SsdCacheTest, AFlippedByteFailsTheChecksum) {
  open();
  read(0);
  const fs::path file = entry_of(dir(), fake_->sample(0));
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-10, std::ios::end);
    f.put('\x5a' ^ static_cast<char>(f.peek()));
  }
  read(0);
  EXPECT_EQ(fake_->reads.load(), 2);
  EXPECT_EQ(health().corrupt, 1U);
}

TEST_F(SsdCacheTest, AnEntryDeletedBehindItsBackIsRefetched) {
  open();
  read(0);
  fs::remove(entry_of(dir(), fake_->sample(0)));
  read(0);
  EXPECT_EQ(fake_->reads.load(), 2);
  EXPECT_EQ(health().corrupt, 0U);
}

TEST_F(SsdCacheTest, AVersionChangeSeenAfterARestartIsRefetched) {
  open();
  read(0);
  open();
  fake_->set_version(0, "v2");  // the file changed while the job was down
  read(0);
  EXPECT_EQ(fake_->reads.load(), 1);
  EXPECT_EQ(health().invalidated, 1U);
  read(0);
  EXPECT_EQ(fake_->reads.load(), 1);
}

void expect_usage_error_naming(const std::function<void()>& call, const fs::path& dir, const std::string& says) {
  try {
    call();
    ADD_FAILURE() << "no error for " << dir;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find(dir.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    EXPECT_FALSE(e.hint().empty());
  }
}

TEST_F(SsdCacheTest, AFileIsNotACacheDirectory) {
  const fs::path file = tmp_.write("plain-file", "x");
  expect_usage_error_naming([&] { make_ssd_cache(std::make_unique<FakeSource>(1, 1), file, kMiB); }, file,
                            "is not a directory");
}

TEST_F(SsdCacheTest, AForeignNonEmptyDirectoryIsRefused) {
  tmp_.write("photos/holiday.jpg", "precious");
  const fs::path photos = tmp_ / "photos";
  expect_usage_error_naming([&] { make_ssd_cache(std::make_unique<FakeSource>(1, 1), photos, kMiB); }, photos,
                            "not a gpufeed cache");
  EXPECT_TRUE(fs::exists(photos / "holiday.jpg"));
}

TEST_F(SsdCacheTest, AMissingDirectoryIsCreated) {
  const fs::path nested = tmp_ / "a" / "b" / "cache";
  auto cache = make_ssd_cache(std::make_unique<FakeSource>(1, 1), nested, kMiB);
  EXPECT_TRUE(fs::is_directory(nested));
}

// A tmpfs mounted for one test (root only), unmounted when it ends.
class TmpfsMount {
 public:
  TmpfsMount(const fs::path& where, unsigned long flags, const std::string& options) : where_(where) {
    fs::create_directories(where);
    if (geteuid() != 0) {
      skip_reason_ = "mounting a tmpfs needs root";
    } else if (::mount("tmpfs", where.c_str(), "tmpfs", flags, options.c_str()) != 0) {
      skip_reason_ = std::string("cannot mount a tmpfs here: ") + std::strerror(errno);
    } else {
      mounted_ = true;
    }
  }
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;
  ~TmpfsMount() {
    if (mounted_) ::umount2(where_.c_str(), MNT_DETACH);
  }
  const std::string& skip_reason() const { return skip_reason_; }

 private:
  fs::path where_;
  bool mounted_ = false;
  std::string skip_reason_;
};

TEST_F(SsdCacheTest, AReadOnlyDirectoryIsAUsageErrorAtOpen) {
  const fs::path ro = tmp_ / "ro";
  if (geteuid() == 0) {
    // Root writes through mode bits; only a read-only mount stops it.
    TmpfsMount mount(ro, MS_RDONLY, "size=1m");
    if (!mount.skip_reason().empty()) GTEST_SKIP() << mount.skip_reason();
    expect_usage_error_naming([&] { make_ssd_cache(std::make_unique<FakeSource>(1, 1), ro, kMiB); }, ro,
                              "not writable");
    return;
  }
  fs::create_directories(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  expect_usage_error_naming([&] { make_ssd_cache(std::make_unique<FakeSource>(1, 1), ro, kMiB); }, ro,
                            "not writable");
  fs::permissions(ro, fs::perms::owner_all);
}

TEST_F(SsdCacheTest, AFullDiskCountsAFailureAndStillServesTheRead) {
  const fs::path small = tmp_ / "small";
  TmpfsMount mount(small, 0, "size=64k");
  if (!mount.skip_reason().empty()) GTEST_SKIP() << mount.skip_reason();
  auto fake = std::make_unique<FakeSource>(2, 200'000);  // larger than the disk
  FakeSource* fake_ptr = fake.get();
  auto cache = make_ssd_cache(std::move(fake), small, 10 * kMiB);
  for (int round = 0; round < 2; ++round) {
    Bytes out;
    cache->read(fake_ptr->sample(0), out);
    EXPECT_EQ(out, expected_bytes(fake_ptr->sample(0)));
  }
  const CacheHealth h = cache->health().at(0);
  EXPECT_EQ(h.write_failures, 2U);
  EXPECT_NE(h.last_write_error.find("No space left on device"), std::string::npos) << h.last_write_error;
  EXPECT_NE(h.last_write_error.find(small.string()), std::string::npos) << h.last_write_error;
  EXPECT_NE(cache->describe().find("2 cache writes failed"), std::string::npos) << cache->describe();
  EXPECT_TRUE(temp_files(small).empty()) << "a failed write must not leave its temp file";
  EXPECT_EQ(cache->tier_stats().at(0).bytes_cached, 0U);
}

TEST_F(SsdCacheTest, ADirectoryThatBecomesUnwritableStillServesReads) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes through mode bits (the tmpfs test covers root)";
  open();
  fs::permissions(dir(), fs::perms::owner_read | fs::perms::owner_exec);
  read(0);
  fs::permissions(dir(), fs::perms::owner_all);
  EXPECT_EQ(health().write_failures, 1U);
  EXPECT_NE(health().last_write_error.find("Permission denied"), std::string::npos) << health().last_write_error;
}

}  // namespace
}  // namespace gpufeed::loader
