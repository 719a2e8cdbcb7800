// The local store on real files, the loader end to end on it with the real
// host backend, and the storage table on the latency-injecting FUSE mount.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <future>
#include <fstream>
#include <memory>

#include "gpufeed/loader/basic_steps.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/loader/local_source.hpp"
#include "gpufeed/os/stop_signals.hpp"
#include "gpufeed/loader/pipeline.hpp"
#include "gpufeed/loader/storage_table.hpp"
#include "gpufeed/device/open_backend.hpp"
#include "support/latencyfs_mount.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed::loader {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

// File i holds its index as 8 bytes, then padding up to 64 bytes.
void write_indexed(const fs::path& path, std::uint64_t index) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  std::string bytes(64, '\0');
  std::memcpy(bytes.data(), &index, sizeof index);
  out << bytes;
}

TEST(LocalSource, ListsEveryFileBelowTheRootSortedSkippingHiddenOnes) {
  TempDir dir;
  dir.write("b/2.jpg", "22");
  dir.write("a/1.jpg", "1");
  dir.write("a/.hidden", "x");
  dir.write(".git/objects/x", "x");
  auto src = open_local_source({dir.path()});
  const auto samples = src->list();
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].key, "a/1.jpg");
  EXPECT_EQ(samples[1].key, "b/2.jpg");
  EXPECT_EQ(samples[1].size, 2u);
  EXPECT_FALSE(samples[0].version.empty()) << "mtime is the version caches validate against";
  EXPECT_EQ(src->kind(), "local");
  EXPECT_NE(src->storage_type(), "unknown") << "the filesystem type comes from mountinfo";
  std::vector<std::byte> bytes;
  src->read(samples[1], bytes);
  EXPECT_EQ(bytes.size(), 2u);
  EXPECT_NO_THROW(src->stat(samples[0]));
  EXPECT_NO_THROW(src->open(samples[0]));
  // Keys are cut from the walked paths as text: a trailing slash or a dot
  // in --data must not leak into them.
  for (const auto& spelled : {dir.path() / "", dir.path() / "."}) {
    const auto again = open_local_source({spelled})->list();
    ASSERT_EQ(again.size(), 2u) << spelled;
    EXPECT_EQ(again[0].key, "a/1.jpg") << spelled;
    EXPECT_EQ(again[1].key, "b/2.jpg") << spelled;
  }
}

TEST(LocalSource, ManifestPathsAreRelativeToTheManifestOrAbsolute) {
  TempDir dir;
  dir.write("data/x.bin", "xx");
  const auto absolute = dir.write("elsewhere/y.bin", "yyy");
  const auto manifest = dir.write("data/list.txt", "# samples\nx.bin\n\n  " + absolute.string() + "  \n");
  auto src = open_local_source({manifest});
  const auto samples = src->list();
  ASSERT_EQ(samples.size(), 2u);
  std::vector<std::byte> bytes;
  src->read(samples[1], bytes);
  EXPECT_EQ(bytes.size(), 3u);
  EXPECT_NE(src->describe().find("manifest"), std::string::npos);
}

TEST(LocalSource, AMissingManifestEntryIsAUsageErrorNamingThePath) {
  TempDir dir;
  const auto manifest = dir.write("list.txt", "gone.bin\n");
  auto src = open_local_source({manifest});
  try {
    src->list();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("gone.bin"), std::string::npos) << e.what();
  }
}

TEST(LocalSource, ASampleThatDisappearsIsASampleErrorNamingIt) {
  TempDir dir;
  dir.write("a.bin", "a");
  auto src = open_local_source({dir.path()});
  const auto samples = src->list();
  fs::remove(dir / "a.bin");
  std::vector<std::byte> bytes;
  try {
    src->read(samples[0], bytes);
    FAIL();
  } catch (const SampleError& e) {
    EXPECT_EQ(e.key(), "a.bin");
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

TEST(LocalSource, ANonexistentPathIsAUsageError) {
  try {
    open_local_source({"/nonexistent/dataset"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dataset"), std::string::npos);
  }
}

TEST(LoaderOnFiles, TheHostBackendDeliversEveryFileInOrder) {
  TempDir dir;
  for (std::uint64_t i = 0; i < 96; ++i) write_indexed(dir / fmt::format("c{}/{:04d}.bin", i % 3, i), i);
  auto src = open_local_source({dir.path()});
  const auto samples = src->list();
  std::string why;
  auto device = open_device_backend(DeviceChoice::Host, why);
  auto transform = make_copy_transform(64);
  struct Check final : StepRunner {
    std::string describe() const override { return "check"; }
    void run(const StepInput& in) override {
      for (int j = 0; j < in.batch_size; ++j) {
        std::uint64_t index = 0;
        std::memcpy(&index, static_cast<const std::byte*>(in.device) + j * 64, sizeof index);
        seen.push_back(index);
      }
    }
    std::vector<std::uint64_t> seen;
  } step;
  LoaderConfig config;
  config.workers = 3;
  config.batch_size = 8;
  LoaderRun run{*src, samples, *transform, *device, step, config, {}, {}};
  run.limits.batches = 12;
  const auto f = run_loader(run);
  ASSERT_EQ(step.seen.size(), 96u);
  // Sorted keys: c0/0000, c0/0003, ..., then c1/..., c2/...
  for (std::size_t k = 0; k < 96; ++k) {
    std::uint64_t expected = 0;
    const std::string key = samples[k].key;
    expected = std::stoull(key.substr(3, 4));
    EXPECT_EQ(step.seen[k], expected) << key;
  }
  // The transfer thread may have copied up to two batches (the device slots)
  // ahead of the last step.
  EXPECT_GE(f.transfer.copies, 12u);
  EXPECT_LE(f.transfer.copies, 14u);
  EXPECT_EQ(f.transfer.bytes, f.transfer.copies * 8u * 64u);
  // Workers run ahead of the step by up to prefetch x workers batches.
  EXPECT_GE(f.bytes_read, 96u * 64u);
  EXPECT_LE(f.bytes_read, (12u + 3u * 2u) * 8u * 64u);
  EXPECT_EQ(device->pinned_bytes(), 0u) << "buffers returned after the run";
}

// `files` files of 50 KiB in dir/source, behind the latencyfs fixture at
// dir/mnt with every lookup `lookup_ms` late.
std::unique_ptr<testing::LatencyFsMount> slow_files(TempDir& dir, int files, double lookup_ms) {
  for (int i = 0; i < files; ++i) dir.write(fmt::format("source/f{:03d}.bin", i), std::string(50 * 1024, 'x'));
  return std::make_unique<testing::LatencyFsMount>(dir / "source", dir / "mnt",
                                                   testing::LatencyFsOptions{.lookup_ms = lookup_ms});
}

// Listing a slow mount (minutes for a large dataset) honours Ctrl-C: the
// walk and the parallel stats check the stop flag, and the listing ends
// within a second of the signal, whether it came before or during it.
TEST(LocalSourceOnFuse, ListingEndsWithinASecondOfCtrlC) {
  if (auto why = testing::LatencyFsMount::unavailable_reason()) GTEST_SKIP() << *why;
  TempDir dir;
  const auto mount = slow_files(dir, 640, 200);  // 640 stats of 200 ms on 32 threads: 4 s
  auto src = open_local_source({mount->path()});
  os::StopOnSignal stop;
  auto listing = std::async(std::launch::async, [&] { return src->list(); });
  const auto signalled = std::chrono::steady_clock::now();
  std::raise(SIGINT);
  ASSERT_EQ(listing.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  try {
    listing.get();
    FAIL() << "the listing ran to its end after Ctrl-C";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_NE(std::string(e.what()).find("interrupted while listing"), std::string::npos) << e.what();
  }
  EXPECT_LT(took, 1.0);
}

TEST(StorageTableOnFuse, StatLatencyIsTheInjectedLookupDelay) {
  if (auto why = testing::LatencyFsMount::unavailable_reason()) GTEST_SKIP() << *why;
  TempDir dir;
  const auto mount = slow_files(dir, 200, 20);
  auto src = open_local_source({mount->path()});
  EXPECT_EQ(src->storage_type(), "fuse.latencyfs");
  const auto samples = src->list();
  StorageProbeOptions options;
  options.concurrency = {1, 16};
  options.per_level = std::chrono::seconds(3);
  options.max_samples_per_level = 60;
  const auto table = measure_storage(*src, samples, options);
  ASSERT_EQ(table.levels.size(), 2u);
  // Every stat looks the path up again (no kernel caching in the fixture).
  EXPECT_GT(table.levels[0].stat.p50_ms, 15.0);
  EXPECT_LT(table.levels[0].stat.p50_ms, 25.0 * 1.25);
  EXPECT_GT(table.levels[1].samples_per_s, 4 * table.levels[0].samples_per_s)
      << "16 streams of a latency-bound store go much faster than one";
}

// Listing costs the store one stat per sample and no more: the keys are cut
// from the walked paths as text. It used to canonicalise every path, several
// lookups per file one after another: 26 s for 400 files on the incident's
// FUSE store (5 ms lookups), before the parallel stats began.
TEST(LocalSourceOnFuse, ListingStatsEachSampleOnce) {
  if (auto why = testing::LatencyFsMount::unavailable_reason()) GTEST_SKIP() << *why;
  TempDir dir;
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 25; ++i) dir.write(fmt::format("source/class_{}/f{:02d}.jpg", c, i), "x");
  }
  testing::LatencyFsMount mount(dir / "source", dir / "mnt", testing::LatencyFsOptions{.lookup_ms = 1});
  const auto samples = open_local_source({mount.path()})->list();
  ASSERT_EQ(samples.size(), 100u);
  EXPECT_EQ(samples.front().key, "class_0/f00.jpg");
  EXPECT_EQ(samples.back().key, "class_3/f24.jpg");
  const std::string out = mount.unmount();
  const auto at = out.find("served file_lookup ");
  ASSERT_NE(at, std::string::npos) << "the fixture prints what it served on exit: " << out;
  EXPECT_EQ(std::stoull(out.substr(at + std::strlen("served file_lookup "))), 100u)
      << "one lookup of each file, the stat that reads its size: " << out;
}

// On the real fixture: a level whose budget ends after two or three slow
// accesses runs on to its minimum, and says so.
TEST(StorageTableOnFuse, AShortLevelRunsOnToItsMinimumOnASlowMount) {
  if (auto why = testing::LatencyFsMount::unavailable_reason()) GTEST_SKIP() << *why;
  TempDir dir;
  const auto mount = slow_files(dir, 12, 60);
  auto src = open_local_source({mount->path()});
  const auto samples = src->list();
  StorageProbeOptions options;
  options.concurrency = {1};
  options.per_level = std::chrono::milliseconds(150);
  options.min_samples_per_level = 6;
  options.overrun_factor = 20;
  const auto level = measure_storage(*src, samples, options).levels.at(0);
  EXPECT_TRUE(level.ran_on);
  EXPECT_EQ(level.samples, 6u);
  EXPECT_GT(level.wall_s, 6 * 0.06) << "each access looks its path up at least once";
}

}  // namespace
}  // namespace gpufeed::loader
