#pragma once
// The CPU and memory budget of each GPU's rank: which cores its DataLoader
// workers should use and how much page-locked memory its prefetch buffers
// may take. Pure arithmetic over a Topology; explained in docs/probe.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/cpulist.hpp"
#include "gpufeed/topology.hpp"

namespace gpufeed {

struct BudgetPolicy {
  double system_reserve_fraction = 0.10;  // cores kept free for the OS, daemons, IRQs
  int runtime_cores_per_gpu = 2;          // the rank's main thread and its pin-memory thread
  double pinned_memory_fraction = 0.25;   // share of local memory prefetch buffers may lock
};

struct HostLimits {
  std::optional<CpuList> allowed_cpus;            // unset: every PU of the topology
  std::optional<double> cpu_quota_cores;          // cgroup cpu.max
  std::optional<std::uint64_t> memory_max_bytes;  // cgroup memory.max
};

// GPUs that share local CPUs (normally one NUMA node) share one pool of cores.
struct LocalityGroup {
  std::string name;             // "NUMA 0", "NUMA 0-1", "all CPUs"
  CpuList cpus;                 // usable PUs of the group
  int ranks = 0;                // GPUs (or 1 for a CPU-only host)
  int usable_cores = 0;
  int reserved_cores = 0;
  int runtime_cores = 0;
  int worker_cores_per_rank = 0;
  int spare_cores = 0;          // left over after an even split
  std::uint64_t local_memory_bytes = 0;
  std::uint64_t prefetch_bytes_per_rank = 0;
  std::string cpu_arithmetic;     // one line, for people
  std::string memory_arithmetic;  // one line, for people
};

struct RankBudget {
  std::string gpu_bus_id;       // empty for a CPU-only host
  std::string group;            // LocalityGroup::name
  std::optional<int> numa_node;
  CpuList runtime_cpus;         // PUs of the runtime cores
  CpuList worker_cpus;          // PUs of the worker cores
  int worker_cores = 0;
  std::uint64_t prefetch_bytes = 0;
};

struct Budget {
  bool cpu_only = false;
  std::vector<LocalityGroup> groups;
  std::vector<RankBudget> ranks;  // group by group, bus-id order within a group
  std::vector<std::string> notes;
};

Budget compute_budget(const Topology& topo, const HostLimits& limits, const BudgetPolicy& policy = {});

}  // namespace gpufeed
