#pragma once
// The envelope every gpufeed JSON document carries (docs/json.md):
// schema, gpufeed_version, created, host.
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpufeed {

// Documents keep their keys in the order we write them (schema first), so a
// person reading the JSON sees the envelope, then the body.
using Json = nlohmann::ordered_json;

struct HostGpu {
  std::string bus_id;
  std::string model;
};

struct HostInfo {
  std::string hostname;
  std::string kernel;
  std::string cpu_model;
  int cpus = 0;                 // online logical CPUs
  std::vector<HostGpu> gpus;    // when known
  bool gpus_known = false;
};

std::string format_utc_iso8601(std::chrono::system_clock::time_point t);

// {"schema": "gpufeed.<kind>/v1", "gpufeed_version", "created", "host", ...body}
Json make_document(std::string_view kind, const HostInfo& host, const Json& body,
                             std::chrono::system_clock::time_point created);

std::string schema_id(std::string_view kind);  // "gpufeed.probe/v1"

// The one way gpufeed writes JSON text. Strings that are not valid UTF-8 (a
// dataset's file name, a traced job's argument) have each bad byte replaced
// by U+FFFD, so the document is always valid JSON (docs/json.md). indent < 0:
// one line.
std::string dump_json(const Json& document, int indent = -1);

// Parses a JSON document a user gave; a usage error says which file (`what`
// and `source`), where (line and column) and what to do (`hint`), without
// the library's own wording.
Json parse_json_text(std::string_view text, std::string_view what, std::string_view source, std::string_view hint);

}  // namespace gpufeed
