// The core names settings; the front end spells them.
#include "gpufeed/setting.hpp"

#include <gtest/gtest.h>

#include "gpufeed/error.hpp"
#include "gpufeed/loader/basic_steps.hpp"

namespace gpufeed {
namespace {

TEST(Setting, WithoutAFrontEndASettingReadsAsItsConfigField) {
  EXPECT_EQ(spell(Setting::workers), "num_workers");
  EXPECT_EQ(spell(Setting::batch_size), "batch_size");
  EXPECT_EQ(flag_for(Setting::workers), std::nullopt);
}

TEST(Setting, TheInstalledSpellingNamesTheFlagAndScopesNest) {
  SettingSpelling outer([](Setting s) -> std::optional<std::string> {
    if (s == Setting::step_ms) return "--step-ms";
    return std::nullopt;
  });
  EXPECT_EQ(spell(Setting::step_ms), "--step-ms");
  EXPECT_EQ(spell(Setting::workers), "num_workers") << "a setting the command has no flag for";
  {
    SettingSpelling inner([](Setting) -> std::optional<std::string> { return "--inner"; });
    EXPECT_EQ(spell(Setting::workers), "--inner");
  }
  EXPECT_EQ(spell(Setting::step_ms), "--step-ms");
}

TEST(Setting, ACoreErrorNamesTheValueAsTheFrontEndSpellsIt) {
  try {
    loader::parse_step_time("soon");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step_ms \"soon\""), std::string::npos) << e.what();
  }
  SettingSpelling cli([](Setting s) -> std::optional<std::string> {
    if (s == Setting::step_ms) return "--step-ms";
    return std::nullopt;
  });
  try {
    loader::parse_step_time("soon");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--step-ms \"soon\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpufeed
