// The bench report on plain values.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "gpufeed/loader/bench_report.hpp"
#include "gpufeed/loader/storage_table.hpp"
#include "gpufeed/loader/synthetic_source.hpp"
#include "gpufeed/units.hpp"
#include "support/fake_loader.hpp"

namespace gpufeed::loader {
namespace {

using namespace std::chrono_literals;

TEST(BenchReport, TextAndJsonCarryTheHeadlineFigures) {
  BenchReport r;
  r.setup.source = "synthetic s3fs";
  r.setup.config.workers = 8;
  r.figures.samples_per_s = 1234.5;
  r.figures.starvation = 0.25;
  r.figures.fetch.add(2'000'000);
  r.tiers.push_back({"memory", 3, 1, 100, 1000, 0});
  const Json j = to_json(r);
  EXPECT_EQ(j["throughput"]["samples_per_s"], 1234.5);
  EXPECT_EQ(j["setup"]["config"]["workers"], 8);
  EXPECT_EQ(j["cache_tiers"][0]["hit_rate"], 0.75);
  std::ostringstream text;
  render_text(r, TextStyle{}, true, text);
  EXPECT_NE(text.str().find("1234 samples/s"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("starvation 25.0%"), std::string::npos);
  EXPECT_NE(text.str().find("memory cache"), std::string::npos);
}

}  // namespace
}  // namespace gpufeed::loader
