// gpufeed monitor's command line without tracing anything: usage errors,
// a taken port, and the shipped Prometheus rules checked by promtool.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <set>

#include "gpufeed/diagnose/findings.hpp"
#include "support/cli_runner.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

using testing::run_cli;

TEST(MonitorCli, NeedsATargetAndAPlaceForTheMetrics) {
  auto r = run_cli({"monitor"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("give one of --pid PID"), std::string::npos) << r.err;
  r = run_cli({"monitor", "--pid", std::to_string(getpid()), "--comm", "python3"});
  EXPECT_EQ(r.code, 2) << "a PID and a name are two targets";
  EXPECT_NE(r.err.find("--pid excludes --comm"), std::string::npos) << r.err;
  r = run_cli({"monitor", "--comm", "a-name-of-sixteen"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--comm a-name-of-sixteen is longer than the kernel's 15-character command name"), std::string::npos)
      << r.err;
  r = run_cli({"monitor", "--comm", "python3", "--batch-size", "0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--batch-size"), std::string::npos) << r.err;
  r = run_cli({"monitor", "--pid", std::to_string(getpid()), "--no-listen"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--no-listen without --jsonl"), std::string::npos) << r.err;
  r = run_cli({"monitor", "--pid", std::to_string(getpid()), "--listen", "localhost"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--listen 'localhost' is not HOST:PORT"), std::string::npos) << r.err;
  r = run_cli({"monitor", "--pid", std::to_string(getpid()), "--interval", "5", "--window", "2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("shorter than --interval"), std::string::npos) << r.err;
  r = run_cli({"monitor", "--pid", "999999"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("process 999999 does not exist"), std::string::npos) << r.err;
}

TEST(MonitorCli, ATakenPortIsOneClearErrorBeforeTheJobIsTouched) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string where = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  const pid_t job = fork();  // a job to watch that is not this process
  if (job == 0) {
    pause();
    _exit(0);
  }
  auto r = run_cli({"monitor", "--pid", std::to_string(job), "--listen", where});
  close(fd);
  kill(job, SIGKILL);
  waitpid(job, nullptr, 0);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot listen on " + where), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line, with its hint:\n" << r.err;
}

TEST(MonitorCli, HelpTeachesTheEndpointAndTheRules) {
  auto r = run_cli({"monitor", "--help"});
  EXPECT_EQ(r.code, 0);
  for (const char* part : {"--listen", "--jsonl", "--window", "re-forked", "--comm", "--cgroup", "restarts", "--batch-size",
                           "samples per joule", "gpufeed-rules.yml", "Examples:"}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part;
  }
}

const std::string kRules = std::string(GPUFEED_SOURCE_DIR) + "/profiles/prometheus/gpufeed-rules.yml";

TEST(MonitorRules, PromtoolAcceptsTheShippedRules) {
  if (access("/usr/bin/promtool", X_OK) != 0) GTEST_SKIP() << "promtool is missing (Debian's prometheus package)";
  testing::TempDir dir;
  const std::string cmd = "/usr/bin/promtool check rules " + kRules + " > " + (dir.path() / "out").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << testing::read_file(dir.path() / "out");
  EXPECT_NE(testing::read_file(dir.path() / "out").find("SUCCESS"), std::string::npos);
}

TEST(MonitorRules, EveryAlertNamesAFindingDiagnoseKnows) {
  const std::string text = testing::read_file(kRules);
  const auto ids = finding_ids();
  const std::set<std::string> known(ids.begin(), ids.end());
  int alerts = 0, named = 0;
  const std::regex alert("\\n\\s*- alert: "), finding("\\n\\s*finding: ([a-z.-]+)"), label("finding=~?\"([a-z.|-]+)\"");
  alerts = static_cast<int>(std::distance(std::sregex_iterator(text.begin(), text.end(), alert), std::sregex_iterator()));
  for (auto it = std::sregex_iterator(text.begin(), text.end(), finding); it != std::sregex_iterator(); ++it) {
    ++named;
    EXPECT_TRUE(known.count((*it)[1])) << (*it)[1] << " is not a finding id";
  }
  for (auto it = std::sregex_iterator(text.begin(), text.end(), label); it != std::sregex_iterator(); ++it) {
    std::string ids_text = (*it)[1];
    for (std::size_t start = 0; start <= ids_text.size();) {
      const auto bar = ids_text.find('|', start);
      const std::string id = ids_text.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
      EXPECT_TRUE(known.count(id)) << id << " in an expression is not a finding id";
      if (bar == std::string::npos) break;
      start = bar + 1;
    }
  }
  EXPECT_GE(alerts, 4);
  EXPECT_EQ(named, alerts) << "each alert names its finding";
}

}  // namespace
}  // namespace gpufeed
