#include <gtest/gtest.h>

#include "gpufeed/cpulist.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed {
namespace {

TEST(CpuList, ParsesRangesAndSingles) {
  EXPECT_EQ(parse_cpulist("0-3,8,10-11\n"), (CpuList{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpulist("5"), (CpuList{5}));
  EXPECT_EQ(parse_cpulist(""), CpuList{});
}

TEST(CpuList, SortsAndDeduplicates) { EXPECT_EQ(parse_cpulist("3,1-2,2"), (CpuList{1, 2, 3})); }

TEST(CpuList, FormatsCompactly) {
  EXPECT_EQ(format_cpulist({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(format_cpulist({}), "");
  EXPECT_EQ(format_cpulist({7}), "7");
}

TEST(CpuList, RoundTrips) {
  for (const char* text : {"0-127", "0,2,4,6", "1-2,64-95,127"}) EXPECT_EQ(format_cpulist(parse_cpulist(text)), text);
}

TEST(CpuList, RejectsMalformedTextAsUsageError) {
  for (const char* bad : {"a", "1-", "-1", "3-1", "1,,2", "1,", "1.5"}) {
    try {
      parse_cpulist(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Usage);
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(CpuList, Intersects) { EXPECT_EQ(intersect({0, 1, 2, 5}, {1, 5, 9}), (CpuList{1, 5})); }

}  // namespace
}  // namespace gpufeed
