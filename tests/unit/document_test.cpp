#include <gtest/gtest.h>

#include "gpufeed/document.hpp"
#include "gpufeed/version.hpp"

namespace gpufeed {
namespace {

TEST(Document, CarriesTheEnvelopeFirst) {
  HostInfo host{"node7", "6.1.0", "AMD EPYC 7A53", 128, {{"0000:c1:00.0", "AMD Instinct MI250X/MI250"}}, true};
  const auto t = std::chrono::system_clock::time_point{std::chrono::seconds{1'700'000'000}};
  Json doc = make_document("probe", host, Json{{"x", 1}}, t);
  EXPECT_EQ(doc["schema"], "gpufeed.probe/v1");
  EXPECT_EQ(doc["gpufeed_version"], kVersion);
  EXPECT_EQ(doc["created"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(doc["host"]["hostname"], "node7");
  EXPECT_EQ(doc["host"]["gpus"][0]["bus_id"], "0000:c1:00.0");
  EXPECT_EQ(doc["x"], 1);
  EXPECT_EQ(doc.begin().key(), "schema");  // people read the kind first
}

TEST(Document, OmitsGpuListWhenUnknown) {
  HostInfo host{"h", "k", "c", 2, {}, false};
  Json doc = make_document("probe", host, Json::object(), std::chrono::system_clock::now());
  EXPECT_FALSE(doc["host"].contains("gpus"));
}

TEST(Document, FormatsUtcIso8601) {
  EXPECT_EQ(format_utc_iso8601(std::chrono::system_clock::time_point{}), "1970-01-01T00:00:00Z");
}

}  // namespace
}  // namespace gpufeed
