#include <gtest/gtest.h>

#include <sstream>

#include "gpufeed/error.hpp"
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

TEST(Units, SizesThatAreNoSizeAreUsageErrors) {
  EXPECT_EQ(parse_size("2GiB", "--mem-budget"), 2ULL << 30);
  for (const char* bad : {"nanGiB", "inf", "-1k", "1e30GiB", "", "GiB", "1e999", "\xff"}) {
    try {
      parse_size(bad, "--mem-budget");
      ADD_FAILURE() << bad << " parsed";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Usage);
      EXPECT_NE(std::string(e.what()).find("--mem-budget"), std::string::npos);
    }
  }
}

TEST(Printable, KeepsUtf8AndEscapesTheRest) {
  EXPECT_EQ(printable("caf\xc3\xa9/train"), "caf\xc3\xa9/train");  // é stays
  EXPECT_EQ(printable("bad\xff\xfename"), "bad\\xff\\xfename");
  EXPECT_EQ(printable("two\nlines\t"), "two\\x0alines\\x09");
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");          // an overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable("\xe2\x82"), "\\xe2\\x82");          // cut short
}

}  // namespace
}  // namespace gpufeed
