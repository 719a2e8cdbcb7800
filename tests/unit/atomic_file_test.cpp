#include <gtest/gtest.h>
#include <sys/stat.h>

#include "gpufeed/atomic_file.hpp"
#include "gpufeed/error.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

using testing::read_file;
using testing::TempDir;

size_t entries(const std::filesystem::path& dir) {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir), {}));
}

TEST(AtomicFile, WritesAndReplacesWithoutLeftovers) {
  TempDir dir;
  write_file_atomically(dir / "out.json", "first");
  write_file_atomically(dir / "out.json", "second");
  EXPECT_EQ(read_file(dir / "out.json"), "second");
  EXPECT_EQ(entries(dir.path()), 1U);
}

TEST(AtomicFile, GivesTheModeOfAPlainCreate) {
  TempDir dir;
  const mode_t old = umask(022);
  write_file_atomically(dir / "out.json", "x");
  umask(old);
  struct stat st {};
  ASSERT_EQ(stat((dir / "out.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644U);
}

TEST(AtomicFile, RefusesToWriteThroughASymlink) {
  TempDir dir;
  dir.write("victim", "precious");
  std::filesystem::create_symlink(dir / "victim", dir / "link.json");
  try {
    write_file_atomically(dir / "link.json", "overwritten");
    FAIL() << "wrote through a symlink";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("link.json"), std::string::npos);
  }
  EXPECT_EQ(read_file(dir / "victim"), "precious");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link.json"));
  EXPECT_EQ(entries(dir.path()), 2U);  // no temporary left behind
}

TEST(AtomicFile, RefusesADirectory) {
  TempDir dir;
  std::filesystem::create_directory(dir / "d");
  EXPECT_THROW(write_file_atomically(dir / "d", "x"), Error);
}

TEST(AtomicFile, MissingDirectoryIsARuntimeErrorNamingIt) {
  TempDir dir;
  try {
    write_file_atomically(dir / "no" / "such" / "out.json", "x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
    EXPECT_NE(std::string(e.what()).find("no/such"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpufeed
