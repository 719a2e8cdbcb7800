// The URL side of the S3 store: s3:// parsing, percent-encoding (what SigV4
// signs must be exactly what is sent), the canonical query and endpoints.
#include <gtest/gtest.h>

#include "gpufeed/s3/s3_source.hpp"
#include "s3_url.hpp"

namespace gpufeed::loader {
namespace {

using s3::canonical_query;
using s3::parse_endpoint;
using s3::request_url;
using s3::uri_encode;

TEST(S3Url, SplitsBucketAndPrefix) {
  auto url = parse_s3_url("s3://my-bucket/imagenet/train/");
  EXPECT_EQ(url.bucket, "my-bucket");
  EXPECT_EQ(url.prefix, "imagenet/train/");
  url = parse_s3_url("s3://my.bucket");
  EXPECT_EQ(url.bucket, "my.bucket");
  EXPECT_EQ(url.prefix, "");
  url = parse_s3_url("S3://bucket/");
  EXPECT_EQ(url.bucket, "bucket");
  EXPECT_EQ(url.prefix, "");
  // The prefix is taken as written: spaces, '+', unicode are key characters.
  EXPECT_EQ(parse_s3_url("s3://bucket/a b+c/é").prefix, "a b+c/é");
}

TEST(S3Url, RejectsWhatIsNotAnS3UrlNamingIt) {
  for (const char* bad : {"bucket/prefix", "http://bucket/x", "s3:/bucket", "s3://", "s3:///prefix", "s3://a b/x",
                          "s3://ab", "s3://bucket?x/y"}) {
    try {
      parse_s3_url(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Usage) << bad;
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
      EXPECT_FALSE(e.hint().empty()) << bad;
    }
  }
}

TEST(S3Url, EncodesEverythingOutsideTheUnreservedSet) {
  EXPECT_EQ(uri_encode("AZaz09-_.~", false), "AZaz09-_.~");
  EXPECT_EQ(uri_encode("a b", false), "a%20b");
  EXPECT_EQ(uri_encode("a+b=c&d", false), "a%2Bb%3Dc%26d");
  EXPECT_EQ(uri_encode("dir/file", true), "dir/file");
  EXPECT_EQ(uri_encode("dir/file", false), "dir%2Ffile");
  EXPECT_EQ(uri_encode("é", true), "%C3%A9");   // UTF-8 bytes, upper-case hex
  EXPECT_EQ(uri_encode("%41", true), "%2541");  // encoded once, never decoded
  EXPECT_EQ(uri_encode("a*b(c)!'", true), "a%2Ab%28c%29%21%27");
  EXPECT_EQ(uri_encode(std::string("\x01\xff", 2), true), "%01%FF");
}

TEST(S3Url, CanonicalQueryIsEncodedAndSorted) {
  const s3::Query query = {{"prefix", "a b/c"}, {"list-type", "2"}, {"continuation-token", "x+y/z="}};
  EXPECT_EQ(canonical_query(query), "continuation-token=x%2By%2Fz%3D&list-type=2&prefix=a%20b%2Fc");
  EXPECT_EQ(canonical_query({}), "");
  EXPECT_EQ(canonical_query({{"b", ""}, {"a", "1"}}), "a=1&b=");
}

TEST(S3Url, ParsesEndpoints) {
  auto e = parse_endpoint("http://127.0.0.1:4569/");
  EXPECT_EQ(e.scheme, "http");
  EXPECT_EQ(e.host, "127.0.0.1:4569");
  EXPECT_EQ(e.url(), "http://127.0.0.1:4569");
  e = parse_endpoint("HTTPS://minio.example:9000");
  EXPECT_EQ(e.url(), "https://minio.example:9000");
}

TEST(S3Url, RejectsBadEndpointsWithoutEchoingCredentials) {
  for (const char* bad :
       {"127.0.0.1:4569", "ftp://host", "http://", "http://host/path", "http://host?x=1", "http://ho st"}) {
    try {
      parse_endpoint(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Usage) << bad;
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
  try {
    parse_endpoint("http://AKIDEXAMPLE:wJalrXUtnFEMI@host/x");
    ADD_FAILURE() << "an endpoint with credentials was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("wJalrXUtnFEMI"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("AKIDEXAMPLE"), std::string::npos) << e.what();
  }
}

TEST(S3Url, BuildsPathStyleAndVirtualHostedUrls) {
  const auto local = parse_endpoint("http://127.0.0.1:4569");
  EXPECT_EQ(request_url(local, true, "bucket", "dir/a b+c=d.jpg", {}),
            "http://127.0.0.1:4569/bucket/dir/a%20b%2Bc%3Dd.jpg");
  EXPECT_EQ(request_url(local, true, "bucket", "", {{"prefix", "p/"}, {"list-type", "2"}}),
            "http://127.0.0.1:4569/bucket?list-type=2&prefix=p%2F");
  const auto aws = parse_endpoint("https://s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(request_url(aws, false, "bucket", "k", {}), "https://bucket.s3.eu-west-1.amazonaws.com/k");
  EXPECT_EQ(request_url(aws, false, "bucket", "", {{"list-type", "2"}}),
            "https://bucket.s3.eu-west-1.amazonaws.com/?list-type=2");
}

TEST(S3Url, VirtualHostingNeedsADnsLabel) {
  EXPECT_TRUE(s3::virtual_host_compatible("my-bucket-1"));
  EXPECT_FALSE(s3::virtual_host_compatible("my.bucket"));  // breaks the TLS wildcard
  EXPECT_FALSE(s3::virtual_host_compatible("My_Bucket"));
}

}  // namespace
}  // namespace gpufeed::loader
