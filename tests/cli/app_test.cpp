// The whole CLI in-process: exit codes, stdout and stderr.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpufeed/version.hpp"
#include "support/cli_runner.hpp"
#include "support/fake_host.hpp"
#include "support/schema_validator.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

using testing::CliSetup;
using testing::run_cli;

std::string fixture(const std::string& name) { return std::string(GPUFEED_FIXTURE_DIR) + "/" + name + ".xml"; }

// Errors are exactly one line, prefixed, and nothing else goes to stderr.
void expect_one_line_error(const testing::CliResult& r, const std::string& needle) {
  EXPECT_EQ(r.err.rfind("gpufeed: error: ", 0), 0U) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST(Cli, Version) {
  auto r = run_cli({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, std::string("gpufeed ") + kVersion + "\n");
}

TEST(Cli, NoCommandShowsHelp) {
  auto r = run_cli({});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("probe"), std::string::npos);
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
}

TEST(Cli, HelpCommandEqualsDashDashHelp) {
  auto a = run_cli({"help", "probe"});
  auto b = run_cli({"probe", "--help"});
  EXPECT_EQ(a.code, 0);
  EXPECT_EQ(b.code, 0);
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out.find("Examples:"), std::string::npos);
  EXPECT_NE(a.out.find("--topology"), std::string::npos);
  EXPECT_NE(a.out.find("--json"), std::string::npos);
}

// A usage error: exit 2 and one line naming `needle`.
void expect_usage_error(const std::vector<std::string>& args, const std::string& needle) {
  auto r = run_cli(args);
  EXPECT_EQ(r.code, 2) << args.front();
  expect_one_line_error(r, needle);
}

TEST(Cli, UsageErrorsExitTwoWithOneLine) {
  expect_usage_error({"probe", "--frobnicate"}, "--frobnicate");
  expect_usage_error({"frobnicate"}, "frobnicate");
  expect_usage_error({"help", "frobnicate"}, "unknown command 'frobnicate'");
  expect_usage_error({"probe", "--topology"}, "--topology");
}

TEST(Cli, AMistypedOptionIsNamedWithTheClosestOne) {
  // Before `--` too: CLI11's own message named the launched command's words.
  expect_usage_error({"diagnose", "--duraton", "3", "--", "sleep", "1"},
                     "unknown option '--duraton' (did you mean --duration?); see 'gpufeed help diagnose'");
  expect_usage_error({"tune", "--data", "/nonexistent", "--max-worker=3"},
                     "unknown option '--max-worker=3' (did you mean --max-workers?)");
  expect_usage_error({"probe", "--zzzzzzzz"}, "unknown option '--zzzzzzzz'; see 'gpufeed help probe' for the options");
  expect_usage_error({"probe", "stray"}, "unexpected argument 'stray'");
  // A typo of a required option is named as the typo, not as the option missing.
  expect_usage_error({"check", "--confg", "c.json"}, "unknown option '--confg' (did you mean --config?)");
  expect_usage_error({"check"}, "--config is required");
}

TEST(Cli, MissingOrMalformedTopologyExitsTwo) {
  testing::TempDir dir;
  auto r = run_cli({"probe", "--topology", (dir / "nope.xml").string()});
  EXPECT_EQ(r.code, 2);
  expect_one_line_error(r, "nope.xml does not exist");
  auto bad = dir.write("bad.xml", "this is not XML");
  r = run_cli({"probe", "--topology", bad.string()});
  EXPECT_EQ(r.code, 2);
  expect_one_line_error(r, "bad.xml is not a valid hwloc XML topology");
  EXPECT_EQ(r.out, "");
}

TEST(Cli, ProbeFixtureJsonOnStdoutIsValid) {
  auto r = run_cli({"probe", "--topology", fixture("mi250x-2s-8gcd"), "--json", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto doc = nlohmann::json::parse(r.out);  // stdout is JSON only
  EXPECT_EQ(testing::schema_errors("probe", doc), "");
  EXPECT_EQ(doc["schema"], "gpufeed.probe/v1");
  EXPECT_TRUE(doc["process"].is_null());
  EXPECT_EQ(doc["topology"]["gpus"].size(), 8U);
  EXPECT_FALSE(doc["host"].contains("gpus"));  // a fixture's GPUs are not this host's
}

TEST(Cli, ProbeEachFixtureTextAndJsonFile) {
  testing::TempDir dir;
  for (const char* name : {"mi250x-2s-8gcd", "nvidia-2s-8gpu", "cpu-1s-nogpu"}) {
    const auto json = dir / (std::string(name) + ".json");
    auto r = run_cli({"probe", "--topology", fixture(name), "--json", json.string()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("Budget"), std::string::npos);
    EXPECT_NE(r.out.find("JSON written to"), std::string::npos);
    EXPECT_EQ(testing::schema_errors("probe", nlohmann::json::parse(testing::read_file(json))), "") << name;
  }
}

TEST(Cli, ProbeThisMachineIsValidAndHasAProcessView) {
  auto r = run_cli({"probe", "--json", "-"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(testing::schema_errors("probe", doc), "");
  EXPECT_TRUE(doc["process"].is_object());
  EXPECT_TRUE(doc["host"].contains("gpus"));
  EXPECT_GE(doc["budget"]["ranks"].size(), 1U);
}

TEST(Cli, QuietPrintsNothing) {
  testing::TempDir dir;
  auto r = run_cli({"probe", "--topology", fixture("cpu-1s-nogpu"), "--quiet", "--json", (dir / "p.json").string()});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(std::filesystem::exists(dir / "p.json"));
}

TEST(Cli, VerboseShowsLibraryDetail) {
  auto r = run_cli({"probe", "--verbose"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("tried"), std::string::npos);
}

TEST(Cli, JsonThroughASymlinkIsRefusedAndTheTargetKept) {
  testing::TempDir dir;
  auto victim = dir.write("victim.txt", "keep me");
  std::filesystem::create_symlink(victim, dir / "out.json");
  auto r = run_cli({"probe", "--topology", fixture("cpu-1s-nogpu"), "--quiet", "--json", (dir / "out.json").string()});
  EXPECT_EQ(r.code, 2);
  expect_one_line_error(r, "symbolic link");
  EXPECT_EQ(testing::read_file(victim), "keep me");
}

TEST(Cli, JsonIntoAMissingDirectoryExitsOneBeforeAnyOutput) {
  auto r = run_cli({"probe", "--topology", fixture("cpu-1s-nogpu"), "--json", "/nonexistent/dir/p.json"});
  EXPECT_EQ(r.code, 1);
  expect_one_line_error(r, "/nonexistent/dir");
  EXPECT_EQ(r.out, "");  // failed fast, not after printing the report
}

TEST(Cli, JsonOntoADirectoryIsAUsageError) {
  testing::TempDir dir;
  auto r = run_cli({"probe", "--topology", fixture("cpu-1s-nogpu"), "--json", dir.path().string()});
  EXPECT_EQ(r.code, 2);
  expect_one_line_error(r, "is a directory");
  EXPECT_EQ(r.out, "");
}

TEST(Cli, ColourOnlyOnATerminalWithoutNoColor) {
  const std::vector<std::string> args{"probe", "--topology", fixture("cpu-1s-nogpu")};
  EXPECT_EQ(run_cli(args, CliSetup{false, {}}).out.find("\x1b["), std::string::npos);
  EXPECT_NE(run_cli(args, CliSetup{true, {}}).out.find("\x1b["), std::string::npos);
  EXPECT_EQ(run_cli(args, CliSetup{true, {{"NO_COLOR", "1"}}}).out.find("\x1b["), std::string::npos);
  EXPECT_EQ(run_cli(args, CliSetup{true, {{"TERM", "dumb"}}}).out.find("\x1b["), std::string::npos);
}

TEST(Cli, UnreadableCgroupFileExitsOneAndIgnoreCgroupGetsPast) {
  testing::FakeHost host;
  host.cgroup_v2("max 100000\n", "max\n");
  std::filesystem::remove(host.root() / "sys/fs/cgroup/job/memory.max");
  host.unreadable("/sys/fs/cgroup/job/memory.max");
  CliSetup setup{false, {}, host.root()};
  auto r = run_cli({"probe"}, setup);
  EXPECT_EQ(r.code, 1);
  expect_one_line_error(r, "job/memory.max");
  r = run_cli({"probe", "--ignore-cgroup"}, setup);
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(Cli, CgroupLimitsShapeTheBudget) {
  testing::FakeHost host;
  host.cgroup_v2("100000 100000\n", "4294967296\n");
  auto r = run_cli({"probe", "--json", "-"}, CliSetup{false, {}, host.root()});
  ASSERT_EQ(r.code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["process"]["cgroup"]["memory_max_bytes"], 4294967296ULL);
  EXPECT_EQ(doc["process"]["usable_cpus"], 1);
  EXPECT_LE(doc["budget"]["ranks"][0]["prefetch_bytes"].get<std::uint64_t>(), 1ULL << 30);  // 4 GiB x 25%
  EXPECT_EQ(doc["host"]["hostname"], "fakehost");
}

}  // namespace
}  // namespace gpufeed
