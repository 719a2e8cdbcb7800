#include <gtest/gtest.h>

#include <sstream>

#include "gpufeed/text.hpp"
#include "gpufeed/units.hpp"

namespace gpufeed {
namespace {

TEST(TextTable, AlignsColumnsByVisibleWidth) {
  TextTable t({"a", "long header"});
  t.add({"wide cell", "x"});
  std::ostringstream out;
  t.print(out, TextStyle{false}, "");
  EXPECT_EQ(out.str(), "a          long header\nwide cell  x\n");
}

TEST(TextStyle, NoEscapesWithoutColour) {
  TextStyle plain{false};
  EXPECT_EQ(plain.warn("x"), "x");
  TextStyle colour{true};
  EXPECT_NE(colour.warn("x").find("\x1b["), std::string::npos);
}

TEST(Units, FormatsBinaryUnits) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(16ULL << 30), "16 GiB");
  EXPECT_EQ(format_bytes(3ULL << 29), "1.5 GiB");
  EXPECT_EQ(format_bytes(512ULL << 30), "512 GiB");
}

}  // namespace
}  // namespace gpufeed
