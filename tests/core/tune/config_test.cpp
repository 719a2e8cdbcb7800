// gpufeed.config/v1 read back: a damaged or hostile config is a usage error
// that names the field, never the JSON library's words.
#include <gtest/gtest.h>

#include "gpufeed/error.hpp"
#include "gpufeed/tune/config.hpp"

namespace gpufeed::tune {
namespace {

Json valid_config() {
  TunedConfig c;
  c.chosen = {8, 4, true};
  c.batch_size = 64;
  c.prediction.samples_per_s = 500;
  Json doc = to_json(c);
  doc["schema"] = "gpufeed.config/v1";  // the document's envelope (document.hpp)
  return doc;
}

std::string refusal(const Json& doc) {
  try {
    config_from_json(doc, "cfg.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    const std::string what = e.what();
    EXPECT_EQ(what.find("json.exception"), std::string::npos) << what;
    EXPECT_NE(what.find("cfg.json"), std::string::npos) << what;
    return what;
  }
  return "";
}

TEST(ConfigFromJson, ReadsWhatToJsonWrote) {
  const TunedConfig back = config_from_json(valid_config(), "cfg.json");
  EXPECT_EQ(back.chosen.workers, 8);
  EXPECT_EQ(back.batch_size, 64);
}

TEST(ConfigFromJson, AMissingOrMistypedSectionIsNamed) {
  Json doc = valid_config();
  doc.erase("dataloader");
  EXPECT_NE(refusal(doc).find("\"dataloader\" is missing"), std::string::npos);
  doc = valid_config();
  doc["prediction"] = "fast";
  EXPECT_NE(refusal(doc).find("\"prediction\" is not an object"), std::string::npos);
  doc = valid_config();
  doc["dataloader"]["num_workers"] = "eight";
  EXPECT_NE(refusal(doc).find("\"num_workers\" has the wrong type"), std::string::npos);
}

TEST(ConfigFromJson, AValueOutOfRangeNamesItsField) {
  for (const auto& [field, key, value] :
       {std::tuple{"dataloader.num_workers", "num_workers", -3}, std::tuple{"dataloader.prefetch_factor", "prefetch_factor", 0},
        std::tuple{"dataloader.batch_size", "batch_size", 0}}) {
    Json doc = valid_config();
    doc["dataloader"][key] = value;
    EXPECT_NE(refusal(doc).find(field), std::string::npos) << field;
  }
  Json doc = valid_config();
  doc["prediction"]["samples_per_s"] = -1.0;
  EXPECT_NE(refusal(doc).find("prediction.samples_per_s"), std::string::npos);
  doc = valid_config();
  doc["workload"]["ranks"] = 0;
  EXPECT_NE(refusal(doc).find("workload.ranks"), std::string::npos);
  doc = valid_config();
  doc["workload"]["cpu_us"] = 1e300;
  EXPECT_NE(refusal(doc).find("workload.cpu_us"), std::string::npos);
}

TEST(ConfigFromJson, AWrongTypeDeepInsideSaysSoInOurWords) {
  Json doc = valid_config();
  doc["prediction"]["interval"] = Json::array({"low", "high"});
  EXPECT_NE(refusal(doc).find("wrong type"), std::string::npos);
}

}  // namespace
}  // namespace gpufeed::tune
