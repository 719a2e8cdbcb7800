// The real executable, spawned: what a user or CI script sees.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"
#include "support/schema_validator.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

using testing::run_binary;

TEST(Binary, VersionAndHelp) {
  auto r = run_binary("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("gpufeed ", 0), 0U);
  r = run_binary("help probe");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Examples:"), std::string::npos);
}

TEST(Binary, ProbeJsonOnStdoutValidates) {
  auto r = run_binary("probe --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(testing::schema_errors("probe", nlohmann::json::parse(r.out)), "");
}

TEST(Binary, BadOptionIsOneLineAndExitTwo) {
  auto r = run_binary("probe --no-such-option");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(Binary, MalformedXmlShowsOnlyOurLine) {
  // hwloc prints its own parser complaints to stderr; the user must see one line.
  testing::TempDir dir;
  auto bad = dir.write("bad.xml", "<?xml version=\"1.0\"?><topology><object type=\"Machine\"></topology>");
  auto r = run_binary("probe --topology " + bad.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace gpufeed
