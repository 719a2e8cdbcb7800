#include "gpufeed/budget.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "gpufeed/units.hpp"

namespace gpufeed {
namespace {

CpuList unite(const CpuList& a, const CpuList& b) {
  CpuList out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

struct Cluster {
  CpuList cpus;
  std::vector<const PciDevice*> gpus;
};

// GPUs whose local CPU sets overlap share cores; merge them until the
// clusters are disjoint, so no core is handed to two groups.
std::vector<Cluster> cluster_gpus(const Topology& topo) {
  std::vector<Cluster> clusters;
  for (const PciDevice* gpu : topo.gpus()) {
    Cluster next{gpu->local_cpus.empty() ? topo.pus : gpu->local_cpus, {gpu}};
    for (auto it = clusters.begin(); it != clusters.end();) {
      if (!intersect(it->cpus, next.cpus).empty()) {
        next.cpus = unite(next.cpus, it->cpus);
        next.gpus.insert(next.gpus.end(), it->gpus.begin(), it->gpus.end());
        it = clusters.erase(it);
      } else {
        ++it;
      }
    }
    clusters.push_back(std::move(next));
  }
  for (auto& c : clusters) {
    std::sort(c.gpus.begin(), c.gpus.end(),
              [](const PciDevice* a, const PciDevice* b) { return a->bus_id < b->bus_id; });
  }
  std::sort(clusters.begin(), clusters.end(),
            [](const Cluster& a, const Cluster& b) { return a.cpus.front() < b.cpus.front(); });
  return clusters;
}

std::vector<int> nodes_within(const Topology& topo, const CpuList& cpus) {
  std::vector<int> nodes;
  for (const auto& node : topo.numa_nodes) {
    if (!node.cpus.empty() && intersect(node.cpus, cpus).size() == node.cpus.size()) {
      nodes.push_back(node.os_index);
    }
  }
  return nodes;
}

std::string group_name(const Topology& topo, const std::vector<int>& nodes) {
  if (nodes.empty() || nodes.size() == topo.numa_nodes.size()) {
    return topo.numa_nodes.size() > 1 ? "all NUMA nodes" : "all CPUs";
  }
  CpuList as_list(nodes.begin(), nodes.end());
  std::sort(as_list.begin(), as_list.end());
  return "NUMA " + format_cpulist(as_list);
}

// The cores of `cpus` this process may run on, each reduced to its allowed PUs.
std::vector<CpuList> usable_cores(const Topology& topo, const CpuList& cpus, const CpuList& allowed) {
  std::vector<CpuList> cores;
  for (const auto& core : topo.cores) {
    CpuList pus = intersect(intersect(core.pus, cpus), allowed);
    if (!pus.empty()) cores.push_back(std::move(pus));
  }
  std::sort(cores.begin(), cores.end());
  return cores;
}

CpuList flatten(std::vector<CpuList>::const_iterator first, std::vector<CpuList>::const_iterator last) {
  CpuList out;
  for (auto it = first; it != last; ++it) out.insert(out.end(), it->begin(), it->end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Budget compute_budget(const Topology& topo, const HostLimits& limits, const BudgetPolicy& policy) {
  Budget budget;
  const CpuList allowed = limits.allowed_cpus ? intersect(*limits.allowed_cpus, topo.pus) : topo.pus;

  std::vector<Cluster> clusters = cluster_gpus(topo);
  if (clusters.empty()) {
    budget.cpu_only = true;
    clusters.push_back(Cluster{topo.pus, {}});
    budget.notes.push_back("no GPU found: the budget is for one CPU-only rank");
  }

  // Cores per cluster, then the cgroup quota scales them all down alike.
  std::vector<std::vector<CpuList>> cores_of;
  int total_cores = 0;
  for (const auto& c : clusters) {
    cores_of.push_back(usable_cores(topo, c.cpus, allowed));
    total_cores += static_cast<int>(cores_of.back().size());
  }
  if (limits.cpu_quota_cores && total_cores > 0 && *limits.cpu_quota_cores < total_cores) {
    const double scale = *limits.cpu_quota_cores / total_cores;
    for (auto& cores : cores_of) {
      const auto keep = static_cast<size_t>(std::max(1.0, std::floor(static_cast<double>(cores.size()) * scale)));
      if (cores.size() > keep) cores.resize(keep);
    }
    budget.notes.push_back(fmt::format(
        "cgroup cpu.max allows {:.1f} CPUs of the {} usable cores: each group keeps {:.0f}% of its cores",
        *limits.cpu_quota_cores, total_cores, scale * 100));
  }
  int total_ranks = 0;
  for (const auto& c : clusters) total_ranks += std::max<int>(1, static_cast<int>(c.gpus.size()));

  for (size_t i = 0; i < clusters.size(); ++i) {
    const Cluster& cluster = clusters[i];
    const std::vector<CpuList>& cores = cores_of[i];
    const std::vector<int> nodes = nodes_within(topo, cluster.cpus);

    LocalityGroup g;
    g.name = group_name(topo, nodes);
    if (!budget.cpu_only && topo.numa_nodes.size() > 1 && nodes.size() != 1) {
      budget.notes.push_back(fmt::format("{} GPU{} without a single local NUMA node: their ranks share the cores of {}",
                                         cluster.gpus.size(), cluster.gpus.size() == 1 ? "" : "s", g.name));
    }
    g.ranks = std::max<int>(1, static_cast<int>(cluster.gpus.size()));
    g.usable_cores = static_cast<int>(cores.size());
    g.cpus = flatten(cores.begin(), cores.end());
    g.reserved_cores = std::min(g.usable_cores,
                                static_cast<int>(std::ceil(g.usable_cores * policy.system_reserve_fraction - 1e-9)));
    g.runtime_cores = std::min(g.usable_cores - g.reserved_cores, policy.runtime_cores_per_gpu * g.ranks);
    const int worker_pool = g.usable_cores - g.reserved_cores - g.runtime_cores;
    g.worker_cores_per_rank = worker_pool / g.ranks;
    g.spare_cores = worker_pool - g.worker_cores_per_rank * g.ranks;
    const std::string who = budget.cpu_only ? "rank" : "GPU";
    const int runtime_wanted = policy.runtime_cores_per_gpu * g.ranks;
    g.cpu_arithmetic = fmt::format(
        "{}: {} cores - {} reserved for the system ({:.0f}%) - {} for runtime threads ({} x {} {}{}{}) = {}"
        " -> {} worker cores per {}{}",
        g.name, g.usable_cores, g.reserved_cores, policy.system_reserve_fraction * 100, g.runtime_cores,
        policy.runtime_cores_per_gpu, g.ranks, who, g.ranks == 1 ? "" : "s",
        g.runtime_cores < runtime_wanted ? fmt::format(" wanted, {} left", g.runtime_cores) : "", worker_pool,
        g.worker_cores_per_rank, who, g.spare_cores ? fmt::format(" ({} spare)", g.spare_cores) : "");
    if (g.worker_cores_per_rank == 0) {
      budget.notes.push_back(fmt::format(
          "{}: too few cores for {} {}{}: DataLoader workers will share cores with the runtime threads",
          g.name, g.ranks, who, g.ranks == 1 ? "" : "s"));
    }

    // Memory: the group's local memory (whole machine without NUMA facts).
    for (int n : nodes) g.local_memory_bytes += topo.numa_node(n)->memory_bytes;
    if (nodes.empty()) g.local_memory_bytes = topo.total_memory();
    const auto by_node = static_cast<std::uint64_t>(static_cast<double>(g.local_memory_bytes) *
                                                    policy.pinned_memory_fraction / g.ranks);
    g.prefetch_bytes_per_rank = by_node;
    g.memory_arithmetic = fmt::format("{}: {} local memory x {:.0f}% / {} {}{} = {} of prefetch buffers per {}",
                                      g.name, format_bytes(g.local_memory_bytes), policy.pinned_memory_fraction * 100,
                                      g.ranks, who, g.ranks == 1 ? "" : "s", format_bytes(by_node), who);
    if (limits.memory_max_bytes) {
      const auto by_cgroup = static_cast<std::uint64_t>(static_cast<double>(*limits.memory_max_bytes) *
                                                        policy.pinned_memory_fraction / total_ranks);
      if (by_cgroup < by_node) {
        g.prefetch_bytes_per_rank = by_cgroup;
        g.memory_arithmetic += fmt::format(", capped by cgroup memory.max {} x {:.0f}% / {} ranks = {}",
                                           format_bytes(*limits.memory_max_bytes),
                                           policy.pinned_memory_fraction * 100, total_ranks, format_bytes(by_cgroup));
      }
    }

    // Hand out cores in order: system first (core 0 takes most interrupts),
    // then each rank's runtime pair, then its workers.
    auto next = cores.begin() + g.reserved_cores;
    const int runtime_each = g.runtime_cores / g.ranks;
    for (int r = 0; r < g.ranks; ++r) {
      RankBudget rank;
      rank.group = g.name;
      if (!cluster.gpus.empty()) {
        rank.gpu_bus_id = cluster.gpus[static_cast<size_t>(r)]->bus_id;
        rank.numa_node = cluster.gpus[static_cast<size_t>(r)]->numa_node;
      } else if (nodes.size() == 1) {
        rank.numa_node = nodes.front();
      }
      rank.runtime_cpus = flatten(next, next + runtime_each);
      next += runtime_each;
      rank.worker_cpus = flatten(next, next + g.worker_cores_per_rank);
      next += g.worker_cores_per_rank;
      rank.worker_cores = g.worker_cores_per_rank;
      rank.prefetch_bytes = g.prefetch_bytes_per_rank;
      budget.ranks.push_back(std::move(rank));
    }
    budget.groups.push_back(std::move(g));
  }
  return budget;
}

}  // namespace gpufeed
