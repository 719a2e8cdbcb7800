#include <gtest/gtest.h>

#include "gpufeed/document.hpp"
#include "gpufeed/error.hpp"
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

// Bytes that are not UTF-8 (a dataset's file name) become U+FFFD: the
// document stays valid JSON instead of failing after the whole run.
TEST(Document, DumpReplacesBytesThatAreNotUtf8) {
  const Json doc = {{"path", "/data/caf\xe9/x\xff.jpg"}, {"ok", "caf\xc3\xa9"}};
  const std::string text = dump_json(doc);
  const Json back = Json::parse(text);
  EXPECT_EQ(back["path"], "/data/caf\xef\xbf\xbd/x\xef\xbf\xbd.jpg");
  EXPECT_EQ(back["ok"], "caf\xc3\xa9");
  EXPECT_NE(dump_json(doc, 2).find('\n'), std::string::npos);
}

TEST(Document, ParseErrorsNameTheFileAndThePlaceInOurWords) {
  try {
    parse_json_text("{\n  \"a\": 1,\n  oops\n}", "the config", "c.json", "give the file gpufeed tune wrote");
    FAIL() << "parsed";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(what.find("the config c.json is not valid JSON"), std::string::npos) << what;
    EXPECT_NE(what.find("line 3, column 3"), std::string::npos) << what;
    EXPECT_EQ(what.find("json.exception"), std::string::npos) << what;
    EXPECT_EQ(e.hint(), "give the file gpufeed tune wrote");
  }
  try {
    parse_json_text("{\"a\": [1, 2", "the config", "c.json", "");
    FAIL() << "parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ends early"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpufeed
