#pragma once
// `gpufeed probe` as a value: the topology, this process's view of the host
// and the per-GPU budget; mapped to JSON (gpufeed.probe/v1) and to text.
#include <optional>
#include <ostream>

#include "gpufeed/budget.hpp"
#include "gpufeed/document.hpp"
#include "gpufeed/process_view.hpp"
#include "gpufeed/text.hpp"
#include "gpufeed/topology.hpp"

namespace gpufeed {

struct ProbeReport {
  Topology topology;
  // Unset when the topology comes from an XML file: this process's limits
  // say nothing about that machine.
  std::optional<ProcessView> process;
  BudgetPolicy policy;
  Budget budget;
};

ProbeReport make_probe_report(Topology topology, std::optional<ProcessView> process,
                              const BudgetPolicy& policy = {});

Json to_json(const ProbeReport& report);  // the body of a gpufeed.probe/v1 document
void render_text(const ProbeReport& report, const TextStyle& style, bool verbose, std::ostream& out);

}  // namespace gpufeed
