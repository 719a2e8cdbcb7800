// The S3 XML reader: ListObjectsV2 pages and error bodies as S3 and s3rver
// write them, and malformed documents refused rather than misread.
#include <gtest/gtest.h>

#include "s3_xml.hpp"

namespace gpufeed::loader::s3 {
namespace {

constexpr const char* kPage = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name><Prefix>train/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>
  <IsTruncated>true</IsTruncated>
  <Contents>
    <Key>train/a &amp; b.jpg</Key>
    <LastModified>2024-01-01T00:00:00.000Z</LastModified>
    <ETag>&quot;5d41402abc4b2a76b9719d911017c592&quot;</ETag>
    <Size>5</Size>
    <Owner><ID>abc</ID><DisplayName>owner</DisplayName></Owner>
    <StorageClass>STANDARD</StorageClass>
  </Contents>
  <Contents><Key>train/caf&#233;-&#x1F600;.jpg</Key><ETag>"etag-2"</ETag><Size>18446744073709551615</Size></Contents>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
</ListBucketResult>)";

TEST(S3Xml, ReadsAListingPage) {
  const auto page = parse_list_page(kPage);
  ASSERT_EQ(page.objects.size(), 2u);
  EXPECT_EQ(page.objects[0].key, "train/a & b.jpg");
  EXPECT_EQ(page.objects[0].size, 5u);
  EXPECT_EQ(page.objects[0].etag, "5d41402abc4b2a76b9719d911017c592");
  EXPECT_EQ(page.objects[1].key, "train/caf\xC3\xA9-\xF0\x9F\x98\x80.jpg");
  EXPECT_EQ(page.objects[1].size, 18446744073709551615ull);
  EXPECT_EQ(page.objects[1].etag, "etag-2");
  EXPECT_TRUE(page.truncated);
  EXPECT_EQ(page.next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
}

TEST(S3Xml, ReadsTheLastAndEmptyPages) {
  auto page = parse_list_page(
      "<ListBucketResult><Prefix/><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>");
  EXPECT_TRUE(page.objects.empty());
  EXPECT_FALSE(page.truncated);
  page = parse_list_page(
      "<ListBucketResult><Contents><Key><![CDATA[a<b>&c]]></Key><Size>1</Size></Contents>"
      "</ListBucketResult>");
  ASSERT_EQ(page.objects.size(), 1u);
  EXPECT_EQ(page.objects[0].key, "a<b>&c");
}

TEST(S3Xml, RefusesMalformedListings) {
  const char* bad[] = {
      "",
      "not xml",
      "<ListBucketResult><Contents><Key>a</Key></ListBucketResult>",               // mismatched end tag
      "<ListBucketResult><Contents><Key>a</Key><Size>1</Size></Contents>",         // unterminated
      "<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",  // no key
      "<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>",
      "<ListBucketResult><Contents><Key>a</Key><Size>12x</Size></Contents></ListBucketResult>",
      "<ListBucketResult><Contents><Key>a &bogus; b</Key><Size>1</Size></Contents></ListBucketResult>",
      "<Error><Code>NoSuchBucket</Code></Error>",  // another root
      "<ListBucketResult></ListBucketResult><ListBucketResult></ListBucketResult>",
  };
  for (const char* xml : bad) EXPECT_THROW(parse_list_page(xml), XmlError) << xml;
}

TEST(S3Xml, ReadsErrorBodies) {
  const auto error = parse_error_body(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>"
      "<Message>The specified key does not exist.</Message><Key>a &amp; b</Key><RequestId>x</RequestId></Error>");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, "NoSuchKey");
  EXPECT_EQ(error->message, "The specified key does not exist.");
  const auto region = parse_error_body(
      "<Error><Code>AuthorizationHeaderMalformed</Code><Message>m</Message><Region>eu-west-1</Region></Error>");
  ASSERT_TRUE(region);
  EXPECT_EQ(region->region, "eu-west-1");
}

TEST(S3Xml, AnythingElseIsNoErrorBody) {
  EXPECT_FALSE(parse_error_body(""));  // HEAD responses
  EXPECT_FALSE(parse_error_body("<html><body>502 Bad Gateway</body></html>"));
  EXPECT_FALSE(parse_error_body("<Error><Code>broken"));
  EXPECT_FALSE(parse_error_body("<ListBucketResult><Error>x</Error></ListBucketResult>"));
}

TEST(S3Xml, ReportsEachElementWithItsPath) {
  std::vector<std::string> seen;
  scan_xml("<a x='1'><b>t</b><s:c/><!-- <d> --></a>",
           [&](const std::string& path, std::string text) { seen.push_back(path + "=" + text); });
  EXPECT_EQ(seen, (std::vector<std::string>{"a/b=t", "a/c=", "a="}));
}

TEST(S3Xml, UnquotesETags) {
  EXPECT_EQ(unquote_etag("\"abc\""), "abc");
  EXPECT_EQ(unquote_etag("abc"), "abc");
  EXPECT_EQ(unquote_etag("\"abc-3\""), "abc-3");
  EXPECT_EQ(unquote_etag("\""), "\"");
}

}  // namespace
}  // namespace gpufeed::loader::s3
