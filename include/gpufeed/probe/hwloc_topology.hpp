#pragma once
// Adapter: the machine's topology from hwloc, with PCI devices.
#include <filesystem>
#include <optional>

#include "gpufeed/topology.hpp"

namespace gpufeed {

// Loads this machine, or an hwloc XML export when `xml` is set. Throws
// gpufeed::Error: usage for a missing or malformed XML, runtime when hwloc
// fails on this machine.
Topology load_topology(const std::optional<std::filesystem::path>& xml);

}  // namespace gpufeed
