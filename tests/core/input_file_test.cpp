#include "gpufeed/input_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>

#include "gpufeed/error.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

using testing::TempDir;

constexpr InputRole kRole{"the config", "give the file gpufeed tune wrote"};

// The usage error's text, or "" when the read succeeded.
std::string refusal(const std::filesystem::path& path, std::uint64_t max_bytes = 1 << 20) {
  try {
    read_input_file(path, kRole, max_bytes);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage) << e.what();
    EXPECT_EQ(e.hint(), kRole.hint);
    return e.what();
  }
  return "";
}

TEST(InputFile, ReadsARegularFileAndALinkToIt) {
  TempDir dir;
  dir.write("c.json", "{}");
  std::filesystem::create_symlink(dir / "c.json", dir / "link.json");
  EXPECT_EQ(read_input_file(dir / "c.json", kRole), "{}");
  EXPECT_EQ(read_input_file(dir / "link.json", kRole), "{}");
}

TEST(InputFile, RefusesWhatIsNotAFileNamingIt) {
  TempDir dir;
  std::filesystem::create_directory(dir / "d");
  std::filesystem::create_symlink(dir / "gone", dir / "dangling");
  EXPECT_NE(refusal(dir / "d").find("is a directory"), std::string::npos);
  EXPECT_NE(refusal(dir / "dangling").find("dangling symbolic link"), std::string::npos);
  EXPECT_NE(refusal(dir / "missing").find("does not exist"), std::string::npos);
  EXPECT_NE(refusal("").find("empty"), std::string::npos);
  EXPECT_NE(refusal("/dev/zero").find("character device"), std::string::npos);
  EXPECT_NE(refusal(dir / "d").find("the config"), std::string::npos);
}

// A FIFO is refused at once: reading one blocks until a writer comes.
TEST(InputFile, AFifoIsRefusedWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(mkfifo((dir / "f").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(refusal(dir / "f").find("is a FIFO"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(InputFile, AFileOverTheBoundIsRefusedUnread) {
  TempDir dir;
  dir.write("big", std::string(2000, 'x'));
  EXPECT_NE(refusal(dir / "big", 1000).find("more than"), std::string::npos);
  EXPECT_EQ(refusal(dir / "big", 4000), "");
}

TEST(InputFile, ANameThatIsNotUtf8IsEscapedInTheMessage) {
  const std::string message = refusal("/nonexistent/\xff\xfe.json");
  EXPECT_NE(message.find("\\xff\\xfe"), std::string::npos) << message;
}

}  // namespace
}  // namespace gpufeed
