// The real hwloc library on generated fake machines (tests/fixtures via
// scripts/gen-topology.py): counts, NUMA placement, budget and golden JSON.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "gpufeed/error.hpp"
#include "gpufeed/probe/hwloc_topology.hpp"
#include "gpufeed/probe_report.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed {
namespace {

constexpr std::uint64_t GiB = 1ULL << 30;

std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(GPUFEED_FIXTURE_DIR) / (name + ".xml");
}

std::vector<std::string> gpus_on(const Topology& t, int node) {
  std::vector<std::string> out;
  for (const auto* g : t.gpus()) {
    if (g->numa_node == node) out.push_back(g->bus_id);
  }
  return out;
}

TEST(FixtureTopology, Mi250xNode) {
  Topology t = load_topology(fixture("mi250x-2s-8gcd"));
  EXPECT_EQ(t.hostname, "mi250x-node");
  EXPECT_EQ(t.packages, 2);
  ASSERT_EQ(t.numa_nodes.size(), 2U);
  EXPECT_EQ(t.cores.size(), 64U);
  EXPECT_EQ(t.pus.size(), 128U);
  EXPECT_EQ(t.total_memory(), 512 * GiB);
  EXPECT_EQ(format_cpulist(t.numa_nodes[1].cpus), "64-127");
  ASSERT_EQ(t.gpus().size(), 8U);
  EXPECT_EQ(gpus_on(t, 0), (std::vector<std::string>{"0000:11:00.0", "0000:19:00.0", "0000:21:00.0", "0000:29:00.0"}));
  EXPECT_EQ(gpus_on(t, 1), (std::vector<std::string>{"0000:c1:00.0", "0000:c9:00.0", "0000:d1:00.0", "0000:d9:00.0"}));
  EXPECT_EQ(t.gpus()[0]->model, "AMD Instinct MI250X/MI250");
  EXPECT_EQ(format_cpulist(t.gpus()[4]->local_cpus), "64-127");
  auto nics = t.devices_of(DeviceKind::Nic);
  ASSERT_EQ(nics.size(), 2U);
  EXPECT_EQ(nics[1]->os_names, std::vector<std::string>{"ib1"});
  EXPECT_EQ(nics[1]->numa_node, 1);
  auto storage = t.devices_of(DeviceKind::Storage);
  ASSERT_EQ(storage.size(), 2U);
  EXPECT_EQ(storage[0]->os_names, std::vector<std::string>{"nvme0n1"});
  EXPECT_EQ(storage[0]->numa_node, 0);
}

TEST(FixtureTopology, Mi250xBudget) {
  auto report = make_probe_report(load_topology(fixture("mi250x-2s-8gcd")), std::nullopt);
  const Budget& b = report.budget;
  ASSERT_EQ(b.ranks.size(), 8U);
  for (const auto& g : b.groups) {
    EXPECT_EQ(g.usable_cores, 32);
    EXPECT_EQ(g.reserved_cores, 4);
    EXPECT_EQ(g.runtime_cores, 8);
    EXPECT_EQ(g.worker_cores_per_rank, 5);
  }
  // Synthetic PUs are numbered core by core: core c has PUs 2c and 2c+1.
  EXPECT_EQ(b.ranks[0].gpu_bus_id, "0000:11:00.0");
  EXPECT_EQ(format_cpulist(b.ranks[0].runtime_cpus), "8-11");
  EXPECT_EQ(format_cpulist(b.ranks[0].worker_cpus), "12-21");
  EXPECT_EQ(format_cpulist(b.ranks[7].worker_cpus), "118-127");
  EXPECT_EQ(b.ranks[7].numa_node, 1);
  EXPECT_EQ(b.ranks[0].prefetch_bytes, 16 * GiB);
}

TEST(FixtureTopology, NvidiaNode) {
  Topology t = load_topology(fixture("nvidia-2s-8gpu"));
  EXPECT_EQ(t.packages, 2);
  EXPECT_EQ(t.cores.size(), 48U);
  EXPECT_EQ(t.pus.size(), 96U);
  ASSERT_EQ(t.gpus().size(), 8U);
  EXPECT_EQ(gpus_on(t, 0).size(), 4U);
  EXPECT_EQ(gpus_on(t, 1).size(), 4U);
  EXPECT_EQ(t.gpus()[0]->model, "NVIDIA H100 SXM5");
  EXPECT_EQ(t.devices_of(DeviceKind::Nic).size(), 2U);

  auto report = make_probe_report(std::move(t), std::nullopt);
  // 24 cores - ceil(2.4)=3 - 8 = 13 -> 3 per GPU, 1 spare.
  EXPECT_EQ(report.budget.groups[0].worker_cores_per_rank, 3);
  EXPECT_EQ(report.budget.groups[0].spare_cores, 1);
  EXPECT_EQ(report.budget.ranks[0].prefetch_bytes, 32 * GiB);
}

TEST(FixtureTopology, CpuOnlyBox) {
  Topology t = load_topology(fixture("cpu-1s-nogpu"));
  EXPECT_EQ(t.gpus().size(), 0U);
  EXPECT_EQ(t.cores.size(), 8U);
  EXPECT_EQ(t.devices_of(DeviceKind::Storage).size(), 1U);
  auto report = make_probe_report(std::move(t), std::nullopt);
  EXPECT_TRUE(report.budget.cpu_only);
  EXPECT_EQ(report.budget.ranks.at(0).worker_cores, 5);
  EXPECT_EQ(report.budget.ranks.at(0).prefetch_bytes, 8 * GiB);
}

// Golden JSON: the whole probe body for each fixture. Regenerate after an
// intended change with GPUFEED_UPDATE_GOLDEN=1 and review the diff.
class GoldenProbe : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenProbe, MatchesGoldenJson) {
  auto report = make_probe_report(load_topology(fixture(GetParam())), std::nullopt);
  report.topology.source = GetParam() + ".xml";  // not the build directory's path
  const Json actual = to_json(report);
  const auto golden = std::filesystem::path(GPUFEED_SOURCE_DIR) / "tests" / "golden" / ("probe-" + GetParam() + ".json");
  if (std::getenv("GPUFEED_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden) << actual.dump(2) << "\n";
  }
  std::ifstream in(golden);
  ASSERT_TRUE(in) << "missing " << golden << "; create it with GPUFEED_UPDATE_GOLDEN=1";
  const Json expected = Json::parse(in);
  EXPECT_EQ(actual, expected) << "actual:\n" << actual.dump(2);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenProbe,
                         ::testing::Values("mi250x-2s-8gcd", "nvidia-2s-8gpu", "cpu-1s-nogpu"));

TEST(FixtureTopology, MissingAndMalformedXmlAreUsageErrors) {
  testing::TempDir dir;
  for (const auto& path : {dir / "missing.xml", dir.write("bad.xml", "<topology><object"), dir.path()}) {
    try {
      load_topology(path);
      ADD_FAILURE() << "loaded " << path;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Usage);
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace gpufeed
