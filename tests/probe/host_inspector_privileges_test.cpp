// As root, the tracing prerequisites are reported as present.
#include <gtest/gtest.h>
#include <unistd.h>

#include "gpufeed/probe/host_inspector.hpp"
#include "support/cli_runner.hpp"

namespace gpufeed {
namespace {

TEST(Root, RootHasTheTracingCapabilities) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (run the tests as root to check CAP_BPF/CAP_PERFMON)";
  auto view = inspect_process(HostPaths{}, InspectOptions{true, false});
  EXPECT_TRUE(view.privileges.root);
  EXPECT_TRUE(view.privileges.cap_sys_admin);
  EXPECT_TRUE(view.privileges.can_trace());
}

TEST(Root, ProbeSaysTracingIsPossibleWhenBtfIsPresent) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  if (!std::filesystem::exists("/sys/kernel/btf/vmlinux")) GTEST_SKIP() << "kernel has no BTF (/sys/kernel/btf/vmlinux)";
  auto r = testing::run_cli({"probe"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("eBPF tracing possible"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gpufeed
