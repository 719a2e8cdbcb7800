#include "gpufeed/probe_report.hpp"

#include <fmt/format.h>

#include "gpufeed/gpu/vendors.hpp"
#include "gpufeed/pci_ids.hpp"
#include "gpufeed/units.hpp"

namespace gpufeed {
namespace {

Json optional_int(const std::optional<int>& v) { return v ? Json(*v) : Json(nullptr); }

Json device_json(const PciDevice& d) {
  return {{"bus_id", d.bus_id},
          {"vendor", vendor_label(d.vendor_id)},
          {"vendor_id", fmt::format("0x{:04x}", d.vendor_id)},
          {"device_id", fmt::format("0x{:04x}", d.device_id)},
          {"class_id", fmt::format("0x{:04x}", d.class_id)},
          {"model", d.model},
          {"os_names", d.os_names},
          {"numa_node", optional_int(d.numa_node)},
          {"local_cpus", format_cpulist(d.local_cpus)},
          {"memory_bytes", d.memory_bytes ? Json(*d.memory_bytes) : Json(nullptr)},
          {"model_source", d.model_source}};
}

Json topology_json(const Topology& t) {
  Json nodes = Json::array();
  for (const auto& n : t.numa_nodes) {
    int cores = 0;
    for (const auto& c : t.cores) cores += c.numa_node == n.os_index;
    nodes.push_back({{"os_index", n.os_index},
                     {"package", n.package},
                     {"memory_bytes", n.memory_bytes},
                     {"cores", cores},
                     {"cpus", format_cpulist(n.cpus)}});
  }
  auto devices = [&](DeviceKind kind) {
    Json list = Json::array();
    for (const auto* d : t.devices_of(kind)) list.push_back(device_json(*d));
    return list;
  };
  return {{"source", t.source},        {"hostname", t.hostname},
          {"packages", t.packages},    {"numa_nodes", nodes},
          {"cores", t.cores.size()},   {"pus", t.pus.size()},
          {"memory_bytes", t.total_memory()},
          {"gpus", devices(DeviceKind::Gpu)},
          {"nics", devices(DeviceKind::Nic)},
          {"storage", devices(DeviceKind::Storage)}};
}

Json process_json(const ProcessView& p) {
  Json libs = Json::array();
  for (const auto& l : p.gpu_libraries) {
    libs.push_back({{"name", l.name}, {"purpose", l.purpose}, {"loadable", l.loadable}, {"detail", l.detail}});
  }
  const auto& c = p.cgroup;
  return {{"allowed_cpus", format_cpulist(p.allowed_cpus)},
          {"usable_cpus", p.usable_cpus()},
          {"cgroup",
           {{"version", c.version},
            {"cpu_quota_cores", c.cpu_quota_cores ? Json(*c.cpu_quota_cores) : Json(nullptr)},
            {"memory_max_bytes", c.memory_max_bytes ? Json(*c.memory_max_bytes) : Json(nullptr)},
            {"cpu_file", c.cpu_file},
            {"memory_file", c.memory_file}}},
          {"kernel", p.kernel},
          {"btf", p.btf},
          {"privileges",
           {{"root", p.privileges.root},
            {"cap_sys_admin", p.privileges.cap_sys_admin},
            {"cap_bpf", p.privileges.cap_bpf},
            {"cap_perfmon", p.privileges.cap_perfmon},
            {"can_trace", p.privileges.can_trace()}}},
          {"tracefs", p.tracefs ? Json(*p.tracefs) : Json(nullptr)},
          {"gpu_libraries", libs}};
}

Json budget_json(const ProbeReport& r) {
  const auto& b = r.budget;
  Json groups = Json::array();
  for (const auto& g : b.groups) {
    groups.push_back({{"name", g.name},
                      {"cpus", format_cpulist(g.cpus)},
                      {"ranks", g.ranks},
                      {"usable_cores", g.usable_cores},
                      {"reserved_cores", g.reserved_cores},
                      {"runtime_cores", g.runtime_cores},
                      {"worker_cores_per_rank", g.worker_cores_per_rank},
                      {"spare_cores", g.spare_cores},
                      {"local_memory_bytes", g.local_memory_bytes},
                      {"prefetch_bytes_per_rank", g.prefetch_bytes_per_rank},
                      {"cpu_arithmetic", g.cpu_arithmetic},
                      {"memory_arithmetic", g.memory_arithmetic}});
  }
  Json ranks = Json::array();
  for (size_t i = 0; i < b.ranks.size(); ++i) {
    const auto& k = b.ranks[i];
    ranks.push_back({{"rank", i},
                     {"gpu_bus_id", k.gpu_bus_id.empty() ? Json(nullptr) : Json(k.gpu_bus_id)},
                     {"group", k.group},
                     {"numa_node", optional_int(k.numa_node)},
                     {"runtime_cpus", format_cpulist(k.runtime_cpus)},
                     {"worker_cpus", format_cpulist(k.worker_cpus)},
                     {"worker_cores", k.worker_cores},
                     {"prefetch_bytes", k.prefetch_bytes}});
  }
  return {{"policy",
           {{"system_reserve_fraction", r.policy.system_reserve_fraction},
            {"runtime_cores_per_gpu", r.policy.runtime_cores_per_gpu},
            {"pinned_memory_fraction", r.policy.pinned_memory_fraction}}},
          {"cpu_only", b.cpu_only},
          {"groups", groups},
          {"ranks", ranks},
          {"notes", b.notes}};
}

std::string yes_no(bool v, const TextStyle& s) { return v ? s.good("yes") : s.warn("no"); }

std::string numa_text(const std::optional<int>& n) { return n ? std::to_string(*n) : "-"; }

void render_devices(const Topology& t, DeviceKind kind, std::string_view title, const TextStyle& s,
                    std::ostream& out) {
  auto list = t.devices_of(kind);
  if (list.empty()) {
    out << s.heading(title) << ": none found";
    if (kind == DeviceKind::Gpu) {
      std::vector<std::string> vendors;
      for (const GpuVendor* v : gpu_vendors_by_id()) vendors.emplace_back(v->name);
      out << " (" << join_names(vendors, " and ") << " GPUs are recognised by PCI vendor and class)";
    }
    out << "\n";
    return;
  }
  out << s.heading(fmt::format("{} ({})", title, list.size())) << "\n";
  const bool gpus = kind == DeviceKind::Gpu;
  TextTable table(gpus ? std::vector<std::string>{"bus id", "model", "memory", "NUMA", "local cpus", "named by"}
                       : std::vector<std::string>{"bus id", "model", "name", "NUMA", "local cpus"});
  for (const auto* d : list) {
    std::string names;
    for (const auto& n : d->os_names) names += (names.empty() ? "" : ",") + n;
    if (gpus) {
      table.add({d->bus_id, d->model, d->memory_bytes ? format_bytes(*d->memory_bytes) : "-", numa_text(d->numa_node),
                 format_cpulist(d->local_cpus), d->model_source});
    } else {
      table.add({d->bus_id, d->model, names.empty() ? "-" : names, numa_text(d->numa_node),
                 format_cpulist(d->local_cpus)});
    }
  }
  table.print(out, s);
}

void render_process(const ProcessView& p, const TextStyle& s, std::ostream& out) {
  out << s.heading("This process") << "\n";
  const auto& c = p.cgroup;
  std::string quota = c.cpu_quota_cores ? fmt::format("cpu.max {:.2f} CPUs", *c.cpu_quota_cores) : "no CPU quota";
  std::string mem = c.memory_max_bytes ? "memory.max " + format_bytes(*c.memory_max_bytes) : "no memory limit";
  out << fmt::format("  CPUs      {} allowed, {} usable (cgroup {}: {}, {})\n", format_cpulist(p.allowed_cpus),
                     p.usable_cpus(), c.version, quota, mem);
  const auto& pr = p.privileges;
  out << fmt::format("  tracing   kernel {}, BTF {}, root {}, CAP_BPF {}, CAP_PERFMON {} -> eBPF tracing {}\n", p.kernel,
                     yes_no(p.btf, s), yes_no(pr.root, s), yes_no(pr.cap_bpf, s), yes_no(pr.cap_perfmon, s),
                     (p.btf && pr.can_trace()) ? s.good("possible") : s.warn("not possible"));
  out << fmt::format("  tracefs   {}\n", p.tracefs ? "mounted at " + *p.tracefs
                                                   : s.warn("not mounted") +
                                                         " (only needed for classic tracepoints: "
                                                         "mount -t tracefs nodev /sys/kernel/tracing)");
  std::string libs;
  for (const auto& l : p.gpu_libraries) {
    libs += fmt::format("{}{} {}", libs.empty() ? "" : ", ", l.name, l.loadable ? s.good("yes") : s.dim("no"));
  }
  out << fmt::format("  GPU libs  {}\n", libs);
}

}  // namespace

ProbeReport make_probe_report(Topology topology, std::optional<ProcessView> process, const BudgetPolicy& policy) {
  HostLimits limits;
  if (process) {
    limits.allowed_cpus = process->allowed_cpus;
    limits.cpu_quota_cores = process->cgroup.cpu_quota_cores;
    limits.memory_max_bytes = process->cgroup.memory_max_bytes;
  }
  Budget budget = compute_budget(topology, limits, policy);
  return ProbeReport{std::move(topology), std::move(process), policy, std::move(budget)};
}

Json to_json(const ProbeReport& report) {
  return {{"topology", topology_json(report.topology)},
          {"process", report.process ? process_json(*report.process) : Json(nullptr)},
          {"budget", budget_json(report)}};
}

void render_text(const ProbeReport& r, const TextStyle& s, bool verbose, std::ostream& out) {
  const Topology& t = r.topology;
  out << s.heading(fmt::format("Machine: {}", t.hostname.empty() ? t.source : t.hostname))
      << (t.source == "this machine" ? "" : s.dim(fmt::format("  (from {})", t.source))) << "\n";
  out << fmt::format("  {} package{}, {} NUMA node{}, {} cores, {} hardware threads, {} memory\n", t.packages,
                     t.packages == 1 ? "" : "s", t.numa_nodes.size(), t.numa_nodes.size() == 1 ? "" : "s",
                     t.cores.size(), t.pus.size(), format_bytes(t.total_memory()));
  TextTable nodes({"NUMA", "package", "memory", "cores", "cpus"});
  for (const auto& n : t.numa_nodes) {
    int cores = 0;
    for (const auto& c : t.cores) cores += c.numa_node == n.os_index;
    nodes.add({std::to_string(n.os_index), n.package < 0 ? "-" : std::to_string(n.package),
               format_bytes(n.memory_bytes), std::to_string(cores), format_cpulist(n.cpus)});
  }
  nodes.print(out, s);
  out << "\n";
  render_devices(t, DeviceKind::Gpu, "GPUs", s, out);
  render_devices(t, DeviceKind::Nic, "NICs", s, out);
  render_devices(t, DeviceKind::Storage, "Storage controllers", s, out);
  out << "\n";
  if (r.process) {
    render_process(*r.process, s, out);
    if (verbose) {
      for (const auto& l : r.process->gpu_libraries) {
        out << fmt::format("            {}: {} ({})\n", l.name, l.detail, l.purpose);
      }
    }
    out << "\n";
  }

  const Budget& b = r.budget;
  out << s.heading(b.cpu_only ? "Budget (CPU-only rank)" : "Budget per GPU rank") << "\n";
  TextTable ranks({"rank", "GPU", "NUMA", "runtime cpus", "worker cpus", "workers", "prefetch memory"});
  for (size_t i = 0; i < b.ranks.size(); ++i) {
    const auto& k = b.ranks[i];
    ranks.add({std::to_string(i), k.gpu_bus_id.empty() ? "-" : k.gpu_bus_id, numa_text(k.numa_node),
               k.runtime_cpus.empty() ? "-" : format_cpulist(k.runtime_cpus),
               k.worker_cpus.empty() ? "-" : format_cpulist(k.worker_cpus), std::to_string(k.worker_cores),
               format_bytes(k.prefetch_bytes)});
  }
  ranks.print(out, s);
  for (const auto& g : b.groups) {
    out << "  " << g.cpu_arithmetic << "\n";
    out << "  " << g.memory_arithmetic << "\n";
  }
  for (const auto& note : b.notes) out << "  " << s.warn("note: ") << note << "\n";
}

}  // namespace gpufeed
