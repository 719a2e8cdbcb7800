#include "gpufeed/document.hpp"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

#include "gpufeed/error.hpp"
#include "gpufeed/text.hpp"
#include "gpufeed/version.hpp"

namespace gpufeed {

std::string format_utc_iso8601(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                     utc.tm_hour, utc.tm_min, utc.tm_sec);
}

std::string schema_id(std::string_view kind) { return fmt::format("gpufeed.{}/v1", kind); }

Json make_document(std::string_view kind, const HostInfo& host, const Json& body,
                             std::chrono::system_clock::time_point created) {
  Json doc = {
      {"schema", schema_id(kind)},
      {"gpufeed_version", kVersion},
      {"created", format_utc_iso8601(created)},
  };
  Json h = {{"hostname", host.hostname}, {"kernel", host.kernel},
                      {"cpu_model", host.cpu_model}, {"cpus", host.cpus}};
  if (host.gpus_known) {
    h["gpus"] = Json::array();
    for (const auto& g : host.gpus) h["gpus"].push_back({{"bus_id", g.bus_id}, {"model", g.model}});
  }
  doc["host"] = std::move(h);
  for (const auto& [key, value] : body.items()) doc[key] = value;
  return doc;
}

std::string dump_json(const Json& document, int indent) {
  return document.dump(indent, ' ', false, Json::error_handler_t::replace);
}

Json parse_json_text(std::string_view text, std::string_view what, std::string_view source, std::string_view hint) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    // e.byte counts from 1 and points just past the offending character.
    const std::size_t at = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < at; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    const std::string problem = at >= text.size() ? "it ends early" : "unexpected text";
    throw usage_error(fmt::format("{} {} is not valid JSON: {} at line {}, column {}", what, printable(source), problem,
                                  line, column),
                      std::string(hint));
  }
}

}  // namespace gpufeed
