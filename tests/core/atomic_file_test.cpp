#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "gpufeed/atomic_file.hpp"
#include "gpufeed/error.hpp"

#include <functional>
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

ErrorKind kind_of_failure(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::Findings;  // "did not throw"
}

TEST(OutputPolicy, AnEmptyPathIsAUsageError) {
  EXPECT_EQ(kind_of_failure([] { check_output_path(""); }), ErrorKind::Usage);
  EXPECT_EQ(kind_of_failure([] { write_output("", "x"); }), ErrorKind::Usage);
}

// A character device is written in place, never replaced by a file: the
// defect that turned /dev/null into a regular file. The node is made here
// (1:3 is the null device), never the system's own.
TEST(OutputPolicy, ACharacterDeviceIsWrittenInPlace) {
  if (geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  TempDir dir;
  const auto node = dir / "fake-null";
  ASSERT_EQ(mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  EXPECT_EQ(check_output_path(node), OutputKind::Stream);
  write_output(node, "{}\n");
  struct stat st {};
  ASSERT_EQ(lstat(node.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(entries(dir.path()), 1U);
  // The regular-file writer refuses it outright.
  EXPECT_EQ(kind_of_failure([&] { write_file_atomically(node, "x"); }), ErrorKind::Usage);
}

TEST(OutputPolicy, AFifoAndALinkToItAreWrittenInPlace) {
  TempDir dir;
  const auto fifo = dir / "pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_symlink(fifo, dir / "link");
  for (const auto& target : {fifo, dir / "link"}) {
    EXPECT_EQ(check_output_path(target), OutputKind::Stream);
    std::string got;
    std::thread reader([&] {
      std::ifstream in(fifo);
      got.assign(std::istreambuf_iterator<char>(in), {});
    });
    write_output(target, "through the pipe");
    reader.join();
    EXPECT_EQ(got, "through the pipe");
  }
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  EXPECT_EQ(entries(dir.path()), 2U);
}

TEST(OutputPolicy, SocketsAndBlockDevicesAreRefused) {
  TempDir dir;
  const auto sock_path = dir / "sock";
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock_path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(kind_of_failure([&] { write_output(sock_path, "x"); }), ErrorKind::Usage);
  close(fd);
  EXPECT_TRUE(std::filesystem::is_socket(sock_path));
  if (geteuid() == 0) {
    const auto block = dir / "block";
    ASSERT_EQ(mknod(block.c_str(), S_IFBLK | 0600, makedev(7, 250)), 0);
    EXPECT_EQ(kind_of_failure([&] { write_output(block, "x"); }), ErrorKind::Usage);
    EXPECT_TRUE(std::filesystem::is_block_file(block));
  }
}

TEST(OutputPolicy, ADanglingLinkIsRefusedAndNothingIsCreated) {
  TempDir dir;
  std::filesystem::create_symlink(dir / "nowhere", dir / "dangling");
  EXPECT_EQ(kind_of_failure([&] { write_output(dir / "dangling", "x"); }), ErrorKind::Usage);
  EXPECT_FALSE(std::filesystem::exists(dir / "nowhere"));
  EXPECT_EQ(entries(dir.path()), 1U);
}

TEST(OutputPolicy, TheNamesOfThisProcesssDescriptorsAreStreams) {
  EXPECT_EQ(check_output_path("/dev/stdout"), OutputKind::Stream);
  EXPECT_EQ(check_output_path("/dev/stderr"), OutputKind::Stream);
  EXPECT_EQ(check_output_path("/proc/self/fd/2"), OutputKind::Stream);
}

TEST(OutputPolicy, TwoNamesOfOneFileAreTheSameOutput) {
  TempDir dir;
  EXPECT_TRUE(same_output_file(dir / "a.json", dir / "." / "a.json"));  // neither exists yet
  EXPECT_FALSE(same_output_file(dir / "a.json", dir / "b.json"));
  dir.write("a.json", "x");
  std::filesystem::create_hard_link(dir / "a.json", dir / "hard.json");
  EXPECT_TRUE(same_output_file(dir / "a.json", dir / "hard.json"));
  if (geteuid() == 0) {
    const auto node = dir / "null";
    ASSERT_EQ(mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
    EXPECT_FALSE(same_output_file(node, node));  // a stream takes both
  }
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
