// `gpufeed probe`: options -> ProbeRequest -> one call -> report.
#include <filesystem>
#include <optional>

#include "context.hpp"
#include "option_values.hpp"
#include "gpufeed/gpu/vendor_samplers.hpp"
#include "gpufeed/gpu/vendors.hpp"
#include "gpufeed/probe/host_inspector.hpp"
#include "gpufeed/probe/hwloc_topology.hpp"
#include "gpufeed/probe_report.hpp"

namespace gpufeed::cli {
namespace {

struct ProbeRequest {
  std::string topology_xml;
  std::string gpu = "auto";
  bool ignore_cgroup = false;
  OutputOptions output;
};

int run_probe(const ProbeRequest& req, Context& ctx) {
  ctx.check_json_target(req.output);
  std::optional<std::filesystem::path> xml;
  if (!req.topology_xml.empty()) xml = req.topology_xml;
  Topology topology = load_topology(xml);
  std::string gpu_note;
  if (!xml) {
    // Name the GPUs (model, memory) from the vendor library when it is here.
    GpuOpenResult opened = open_gpu_sampler(req.gpu);
    if (opened.sampler) {
      merge_vendor_gpus(topology, opened.sampler->devices(), opened.sampler->backend());
    } else if (!topology.gpus().empty()) {
      gpu_note = "GPUs named from PCI ids only: " + opened.unavailable;
    }
  }

  std::optional<ProcessView> process;
  if (!xml) process = inspect_process(ctx.io.host, InspectOptions{!req.ignore_cgroup, true});
  ProbeReport report = make_probe_report(std::move(topology), std::move(process));
  if (!gpu_note.empty()) report.budget.notes.push_back(gpu_note);

  HostInfo host = inspect_host(ctx.io.host);
  if (!xml) {  // the GPUs are this host's only when we probed this host
    host.gpus_known = true;
    for (const auto* gpu : report.topology.gpus()) host.gpus.push_back({gpu->bus_id, gpu->model});
  }
  if (ctx.wants_text(req.output)) render_text(report, ctx.style, req.output.verbose, ctx.io.out);
  ctx.emit_json(req.output, make_document("probe", host, to_json(report), ctx.io.now()));
  return 0;
}

}  // namespace

Command add_probe_command(CLI::App& app) {
  auto req = std::make_shared<ProbeRequest>();
  CLI::App* cmd = app.add_subcommand("probe", "Show the machine: topology, GPUs and their NUMA locality, "
                                              "what this process may use, and the CPU/memory budget per GPU");
  cmd->add_option("--topology", req->topology_xml, "Read an hwloc XML export instead of this machine")
      ->check(input_path("--topology", {"topology file", "give an hwloc XML export, e.g. from 'lstopo --of xml topo.xml'"}))
      ->type_name("FILE.xml");
  cmd->add_flag("--ignore-cgroup", req->ignore_cgroup, "Do not read cgroup CPU and memory limits");
  cmd->add_option("--gpu", req->gpu, "Name GPUs with: " + sampler_choices_text(true, true))
      ->check(one_of("--gpu", sampler_choices(true)))
      ->default_val("auto")
      ->type_name("BACKEND");
  add_output_options(*cmd, req->output);
  cmd->footer(R"(The budget reserves ~10% of each NUMA node's cores for the system and 2 cores per GPU
for the rank's main and pin-memory threads; the rest are split among that node's GPUs.

Examples:
  gpufeed probe
  gpufeed probe --json probe.json
  gpufeed probe --topology node.xml --json -     # a machine exported with 'lstopo --of xml')");
  return {cmd, [req](Context& ctx) { return run_probe(*req, ctx); }};
}

}  // namespace gpufeed::cli
