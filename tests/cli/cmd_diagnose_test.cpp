// gpufeed diagnose without eBPF: /proc sampling on a real starving job (a
// loop reading batches from a slow producer process through a pipe, the way
// a DataLoader's loop reads its workers' results). No root needed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/python_fixtures.hpp"
#include "support/cli_runner.hpp"
#include "support/schema_validator.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {


TEST(DiagnoseProcOnly, SampledDataWaitFindsTheStarvedLoop) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  testing::TempDir dir;
  const auto json_path = dir / "d.json";
  auto r = testing::run_binary("diagnose --no-ebpf --duration 10 --json " + json_path.string() +
                               " -- " + testing::demo_job_command(3));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("eBPF tracing is not available (disabled by --no-ebpf)"), std::string::npos) << r.err;
  auto doc = nlohmann::json::parse(testing::read_file(json_path));
  EXPECT_EQ(testing::schema_errors("diagnosis", doc), "");
  EXPECT_EQ(doc["evidence"]["ebpf"], false);
  EXPECT_EQ(doc["evidence"]["data_wait_source"], "proc-sampling");
  const double wait = doc["evidence"]["data_wait_fraction"].get<double>();
  EXPECT_GT(wait, 0.5) << "sampled data wait " << wait;
  bool starved = false;
  for (const auto& f : doc["findings"]) {
    if (f["id"] == "loop.starved") {
      starved = true;
      EXPECT_NE(f["confidence"], "high");
    }
  }
  EXPECT_TRUE(starved) << doc["findings"].dump(2);
  EXPECT_EQ(doc["end_reason"], "target exited");
}

TEST(DiagnoseProcOnly, UsageErrors) {
  auto r = testing::run_binary("diagnose --no-ebpf --duration 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("give either --pid PID"), std::string::npos) << r.err;
  r = testing::run_binary("diagnose --no-ebpf --pid 999999");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("process 999999 does not exist"), std::string::npos) << r.err;
  r = testing::run_binary("diagnose --fail-on loud -- /bin/true");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--fail-on loud is not known; use info, warning or critical"), std::string::npos) << r.err;
  r = testing::run_binary("diagnose --no-ebpf --require-ebpf -- /bin/true");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("contradict"), std::string::npos) << r.err;
}

TEST(DiagnoseProcOnly, FailOnTurnsFindingsIntoExitFour) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  testing::TempDir dir;
  auto r = testing::run_binary("diagnose --no-ebpf --quiet --fail-on warning --duration 10 -- " + testing::demo_job_command(3));
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("findings at or above 'warning'"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace gpufeed
