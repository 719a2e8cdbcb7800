// Credentials never appear in what the S3 store says: every error path it
// has is provoked with distinctive credentials, and no message, hint or
// describe() may contain the secret key, the session token or the key id.
// One path has the server echo the secret back; it must come out redacted.
#include <gtest/gtest.h>

#include <functional>

#include "gpufeed/s3/s3_source.hpp"
#include "support/fault_proxy.hpp"
#include "support/s3rver.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed::loader {
namespace {

using testing::Fault;
using testing::s3_error_xml;
using testing::S3rver;

constexpr const char* kKeyId = "AKIDNEVERSHOWN1234";
constexpr const char* kSecret = "SECRETNEVERSHOWN/abc+def";
constexpr const char* kToken = "TOKENNEVERSHOWN//xyz=";

S3Options secret_options(const std::string& url, const std::string& endpoint) {
  auto options = testing::s3_test_options(url, endpoint);
  options.env = {{"AWS_ACCESS_KEY_ID", kKeyId}, {"AWS_SECRET_ACCESS_KEY", kSecret}, {"AWS_SESSION_TOKEN", kToken}};
  options.requests.max_attempts = 2;
  options.requests.request_timeout = std::chrono::milliseconds(1000);
  return options;
}

class S3Secrets : public ::testing::Test {
 protected:
  // Runs `f`, which must throw gpufeed::Error, and checks its text.
  void expect_no_secret(const std::string& path, const std::function<void()>& f) {
    try {
      f();
      ADD_FAILURE() << path << ": no error was thrown";
    } catch (const Error& e) {
      const std::string text = std::string(e.what()) + "\n" + e.hint();
      for (const char* secret : {kKeyId, kSecret, kToken}) {
        EXPECT_EQ(text.find(secret), std::string::npos) << path << " shows a credential: " << text;
      }
      ++paths_;
    }
  }
  // Opens the store with `options` after `edit`, which must make it fail.
  void expect_open_shows_no_secret(const std::string& path, S3Options options,
                                   const std::function<void(S3Options&)>& edit) {
    edit(options);
    expect_no_secret(path, [&] { open_s3_source(options); });
  }
  int paths_ = 0;
};

TEST_F(S3Secrets, ConfigurationErrorsShowNoCredentials) {
  auto options = secret_options("s3://bucket/p", "http://127.0.0.1:1");
  expect_open_shows_no_secret("bad url", options, [](S3Options& o) { o.url = "s3:/bucket"; });
  expect_open_shows_no_secret("endpoint with user info", options, [](S3Options& o) {
    o.endpoint = std::string("http://") + kKeyId + ":" + kSecret + "@host";
  });
  expect_open_shows_no_secret("secret without key id", options,
                              [](S3Options& o) { o.env.erase("AWS_ACCESS_KEY_ID"); });
  expect_open_shows_no_secret("key id without secret", options,
                              [](S3Options& o) { o.env.erase("AWS_SECRET_ACCESS_KEY"); });
  testing::TempDir home;
  home.write(".aws/credentials", std::string("[default]\naws_access_key_id = ") + kKeyId + "\n" +
                                     "[other]\naws_secret_access_key = " + kSecret + "\n");
  const std::string home_dir = home.path().string();
  expect_open_shows_no_secret("profile without secret", options,
                              [&](S3Options& o) { o.env = {{"HOME", home_dir}}; });
  expect_open_shows_no_secret("profile without key id", options,
                              [&](S3Options& o) { o.env = {{"HOME", home_dir}, {"AWS_PROFILE", "other"}}; });
  expect_open_shows_no_secret("missing profile", options, [&](S3Options& o) {
    o.profile = "absent";
    o.env["HOME"] = home_dir;
  });
  expect_open_shows_no_secret("bad region", options, [](S3Options& o) { o.region = "Not A Region"; });
  expect_open_shows_no_secret("option out of range", options,
                              [](S3Options& o) { o.requests.max_connections = -1; });
  EXPECT_EQ(paths_, 9);
  const auto source = open_s3_source(options);
  for (const char* secret : {kKeyId, kSecret, kToken}) EXPECT_EQ(source->describe().find(secret), std::string::npos);
}

TEST_F(S3Secrets, ServerAndTransportErrorsShowNoCredentials) {
  // Each answer in turn, for a listing and for each object operation.
  const std::vector<std::pair<std::string, Fault>> answers = {
      {"403", Fault::respond(403, s3_error_xml("AccessDenied", "Access Denied"))},
      {"404 bucket", Fault::respond(404, s3_error_xml("NoSuchBucket", "The specified bucket does not exist"))},
      {"404 key", Fault::respond(404, s3_error_xml("NoSuchKey", "The specified key does not exist."))},
      {"400", Fault::respond(400, s3_error_xml("InvalidArgument", "bad"))},
      {"500", Fault::respond(500, s3_error_xml("InternalError", "We encountered an internal error."))},
      {"503", Fault::respond(503, s3_error_xml("SlowDown", "Please reduce your request rate."))},
      {"secret echoed",
       Fault::respond(403, s3_error_xml("SignatureDoesNotMatch",
                                        std::string("signed with ") + kSecret + " by " + kKeyId + " token " + kToken))},
      {"secret echoed 500", Fault::respond(500, s3_error_xml("InternalError", std::string("oops ") + kSecret))},
      {"unreadable listing", Fault::respond(200, std::string("<ListBucketResult><Key>") + kSecret)},
      {"reset", Fault::reset()},
      {"hang", Fault::hang()},
      {"502 no body", Fault::forward()},  // nothing behind the proxy: 502
  };
  for (const auto& [name, answer] : answers) {
    testing::FaultProxy proxy(0, [answer = answer](const testing::HttpRequest&, int) { return answer; });
    auto source = open_s3_source(secret_options("s3://bucket/p", proxy.endpoint()));
    const SampleInfo sample{"p/object", 1, ""};
    std::vector<std::byte> out;
    expect_no_secret(name + " list", [&] { source->list(); });
    if (name == "unreadable listing") continue;  // a 200 for objects is no error
    expect_no_secret(name + " stat", [&] { source->stat(sample); });
    expect_no_secret(name + " open", [&] { source->open(sample); });
    expect_no_secret(name + " read", [&] { source->read(sample, out); });
  }
  EXPECT_EQ(paths_, 11 * 4 + 1);

  const int port = testing::closed_loopback_port();
  auto source = open_s3_source(secret_options("s3://bucket/p", "http://127.0.0.1:" + std::to_string(port)));
  expect_no_secret("connection refused", [&] { source->list(); });
  source = open_s3_source(secret_options("s3://bucket/p", "http://host.invalid"));
  expect_no_secret("unresolvable host", [&] { source->list(); });
}

TEST_F(S3Secrets, RealServerErrorsShowNoCredentials) {
  if (auto why = S3rver::unavailable_reason()) GTEST_SKIP() << *why;
  S3rver server({"data"});
  server.put_objects("data", {{"p/x", "x"}});
  // s3rver answers an unknown key id with 403 InvalidAccessKeyId and puts the
  // key id into its error document.
  auto source = open_s3_source(secret_options("s3://data/p", server.endpoint()));
  expect_no_secret("s3rver 403 list", [&] { source->list(); });
  expect_no_secret("s3rver 403 stat", [&] { source->stat({"p/x", 1, ""}); });
  // With the key s3rver knows, but the secret and token still ours.
  auto options = secret_options("s3://data/p", server.endpoint());
  options.env["AWS_ACCESS_KEY_ID"] = "S3RVER";
  source = open_s3_source(options);
  std::vector<std::byte> out;
  expect_no_secret("s3rver missing key", [&] { source->read({"p/missing", 1, ""}, out); });
  expect_no_secret("s3rver missing bucket", [&] {
    auto o = options;
    o.url = "s3://nope/p";
    open_s3_source(o)->list();
  });
  expect_no_secret("s3rver empty prefix", [&] {
    auto o = options;
    o.url = "s3://data/empty/";
    open_s3_source(o)->list();
  });
  server.kill();
  expect_no_secret("s3rver killed", [&] { source->read({"p/x", 1, ""}, out); });
}

}  // namespace
}  // namespace gpufeed::loader
