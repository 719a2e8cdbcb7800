#include <gtest/gtest.h>

#include <fmt/format.h>

#include "gpufeed/budget.hpp"

namespace gpufeed {
namespace {

constexpr std::uint64_t GiB = 1ULL << 30;

// nodes x cores_per_node cores with 2 PUs each (PU numbering like Linux:
// first threads 0..N-1, siblings N..2N-1), and gpus_per_node GPUs per node.
Topology make_node(int nodes, int cores_per_node, int gpus_per_node, std::uint64_t mem_per_node = 256 * GiB) {
  Topology t;
  t.source = "test";
  t.packages = nodes;
  const int cores = nodes * cores_per_node;
  for (int n = 0; n < nodes; ++n) {
    NumaNode node{n, n, mem_per_node, {}};
    for (int c = n * cores_per_node; c < (n + 1) * cores_per_node; ++c) {
      t.cores.push_back(Core{n, {c, c + cores}});
      node.cpus.push_back(c);
      node.cpus.push_back(c + cores);
    }
    std::sort(node.cpus.begin(), node.cpus.end());
    for (int g = 0; g < gpus_per_node; ++g) {
      PciDevice gpu;
      gpu.bus_id = fmt::format("0000:{:02x}:00.0", 0x10 + n * 0x40 + g * 8);
      gpu.kind = DeviceKind::Gpu;
      gpu.numa_node = n;
      gpu.local_cpus = node.cpus;
      t.devices.push_back(gpu);
    }
    t.numa_nodes.push_back(node);
  }
  for (int p = 0; p < 2 * cores; ++p) t.pus.push_back(p);
  return t;
}

TEST(Budget, SplitsEachNodeAmongItsGpus) {
  // 2 x 32 cores, 4 GPUs per node: 32 - ceil(3.2)=4 reserved - 8 runtime = 20 -> 5 per GPU.
  Budget b = compute_budget(make_node(2, 32, 4), {});
  ASSERT_EQ(b.groups.size(), 2U);
  ASSERT_EQ(b.ranks.size(), 8U);
  const LocalityGroup& g = b.groups[0];
  EXPECT_EQ(g.name, "NUMA 0");
  EXPECT_EQ(g.usable_cores, 32);
  EXPECT_EQ(g.reserved_cores, 4);
  EXPECT_EQ(g.runtime_cores, 8);
  EXPECT_EQ(g.worker_cores_per_rank, 5);
  EXPECT_EQ(g.spare_cores, 0);
  // Cores 0-3 for the system, 4-5 runtime of rank 0, 6-10 its workers (with SMT siblings).
  EXPECT_EQ(format_cpulist(b.ranks[0].runtime_cpus), "4-5,68-69");
  EXPECT_EQ(format_cpulist(b.ranks[0].worker_cpus), "6-10,70-74");
  EXPECT_EQ(format_cpulist(b.ranks[4].worker_cpus), "38-42,102-106");
  EXPECT_EQ(b.ranks[4].numa_node, 1);
  EXPECT_EQ(b.ranks[0].prefetch_bytes, 16 * GiB);  // 256 GiB x 25% / 4
  EXPECT_NE(g.cpu_arithmetic.find("32 cores - 4 reserved"), std::string::npos) << g.cpu_arithmetic;
  EXPECT_TRUE(b.notes.empty());
}

TEST(Budget, NoCoreIsGivenTwice) {
  Budget b = compute_budget(make_node(2, 24, 4), {});
  CpuList seen;
  for (const auto& r : b.ranks) {
    for (const auto* list : {&r.runtime_cpus, &r.worker_cpus}) {
      EXPECT_TRUE(intersect(seen, *list).empty());
      seen.insert(seen.end(), list->begin(), list->end());
      std::sort(seen.begin(), seen.end());
    }
  }
}

TEST(Budget, LeftoverCoresAreSpare) {
  Budget b = compute_budget(make_node(1, 17, 2), {});  // 17 - 2 - 4 = 11 -> 5 each, 1 spare
  EXPECT_EQ(b.groups[0].worker_cores_per_rank, 5);
  EXPECT_EQ(b.groups[0].spare_cores, 1);
}

TEST(Budget, AffinityLimitsTheUsableCores) {
  HostLimits limits;
  limits.allowed_cpus = parse_cpulist("0-15,64-79");  // half of node 0 only
  Budget b = compute_budget(make_node(2, 32, 4), limits);
  EXPECT_EQ(b.groups[0].usable_cores, 16);  // 16 - 2 - 8 = 6 -> 1 per GPU (2 spare)
  EXPECT_EQ(b.groups[0].worker_cores_per_rank, 1);
  EXPECT_EQ(b.groups[1].usable_cores, 0);
  EXPECT_EQ(b.groups[1].worker_cores_per_rank, 0);
  EXPECT_FALSE(b.notes.empty());
}

TEST(Budget, CgroupQuotaScalesEveryGroup) {
  HostLimits limits;
  limits.cpu_quota_cores = 16.0;  // of 64 cores: each group keeps 25%
  Budget b = compute_budget(make_node(2, 32, 4), limits);
  EXPECT_EQ(b.groups[0].usable_cores, 8);
  EXPECT_EQ(b.groups[1].usable_cores, 8);
  EXPECT_NE(b.notes.at(0).find("cpu.max"), std::string::npos);
}

TEST(Budget, CgroupMemoryCapsPrefetch) {
  HostLimits limits;
  limits.memory_max_bytes = 64 * GiB;  // x 25% / 8 ranks = 2 GiB
  Budget b = compute_budget(make_node(2, 32, 4), limits);
  EXPECT_EQ(b.ranks[0].prefetch_bytes, 2 * GiB);
  EXPECT_NE(b.groups[0].memory_arithmetic.find("memory.max"), std::string::npos);
}

TEST(Budget, GpusWithoutLocalityShareTheWholeMachine) {
  Topology t = make_node(2, 8, 1);
  for (auto& d : t.devices) {
    d.numa_node.reset();
    d.local_cpus = t.pus;
  }
  Budget b = compute_budget(t, {});
  ASSERT_EQ(b.groups.size(), 1U);
  EXPECT_EQ(b.groups[0].name, "all NUMA nodes");
  EXPECT_EQ(b.groups[0].usable_cores, 16);
  EXPECT_EQ(b.groups[0].ranks, 2);
  EXPECT_EQ(b.groups[0].worker_cores_per_rank, 5);  // 16 - 2 - 4 = 10
  EXPECT_EQ(b.groups[0].local_memory_bytes, 512 * GiB);
  EXPECT_FALSE(b.notes.empty());
}

TEST(Budget, CpuOnlyHostGetsOneRank) {
  Budget b = compute_budget(make_node(1, 8, 0, 32 * GiB), {});
  EXPECT_TRUE(b.cpu_only);
  ASSERT_EQ(b.ranks.size(), 1U);
  EXPECT_TRUE(b.ranks[0].gpu_bus_id.empty());
  EXPECT_EQ(b.ranks[0].worker_cores, 5);  // 8 - 1 - 2
  EXPECT_EQ(b.ranks[0].prefetch_bytes, 8 * GiB);
}

TEST(Budget, TooFewCoresIsSaidNotHidden) {
  Budget b = compute_budget(make_node(1, 2, 0, 4 * GiB), {});
  EXPECT_EQ(b.ranks[0].worker_cores, 0);
  bool said = false;
  for (const auto& n : b.notes) said |= n.find("too few cores") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(Budget, PolicyIsApplied) {
  BudgetPolicy p;
  p.system_reserve_fraction = 0.0;
  p.runtime_cores_per_gpu = 1;
  p.pinned_memory_fraction = 0.5;
  Budget b = compute_budget(make_node(1, 10, 2, 8 * GiB), {}, p);
  EXPECT_EQ(b.groups[0].worker_cores_per_rank, 4);  // 10 - 0 - 2 = 8
  EXPECT_EQ(b.ranks[0].prefetch_bytes, 2 * GiB);
}

}  // namespace
}  // namespace gpufeed
