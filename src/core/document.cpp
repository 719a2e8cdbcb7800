#include "gpufeed/document.hpp"

#include <ctime>

#include <fmt/format.h>

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

}  // namespace gpufeed
