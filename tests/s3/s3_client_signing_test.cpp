// SigV4 as libcurl sends it, checked against botocore's signer: a proxy with
// nothing behind it records each request exactly as it arrived (target,
// headers, x-amz-date), and tests/fixtures/sigv4_reference.py signs the same
// method, bucket, raw key and raw query parameters at the same time with the
// same credentials. The target it would send and the Authorization header it
// computes must equal what libcurl sent. s3rver does not verify signatures,
// so this is where a wrong encoding or a missing signed header shows up.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "gpufeed/s3/s3_source.hpp"
#include "support/fault_proxy.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed::loader {
namespace {

using nlohmann::json;
using testing::Fault;
using testing::FaultProxy;
using testing::HttpRequest;
using testing::TempDir;

const std::string kReference = std::string(GPUFEED_SOURCE_DIR) + "/tests/fixtures/sigv4_reference.py";

std::optional<std::string> reference_unavailable() {
  if (std::system("/usr/bin/python3 -c 'import botocore' >/dev/null 2>&1") != 0) {
    return "Debian's python3-botocore is not installed for /usr/bin/python3 (the reference SigV4 signer); "
           "scripts/setup.sh installs it";
  }
  return std::nullopt;
}

// What the store meant to send, before any encoding.
struct Intended {
  std::string method;
  std::string key;
  std::vector<std::pair<std::string, std::string>> params;
};

struct Credentials {
  std::string key_id, secret, token;
};

// "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=a;b, Signature=..." -> {a, b}
std::vector<std::string> signed_headers(const std::string& authorization) {
  const auto start = authorization.find("SignedHeaders=");
  if (start == std::string::npos) return {};
  const auto names = authorization.substr(start + 14, authorization.find(',', start) - start - 14);
  std::vector<std::string> out;
  size_t from = 0;
  while (from <= names.size()) {
    const auto semicolon = names.find(';', from);
    out.push_back(names.substr(from, semicolon == std::string::npos ? std::string::npos : semicolon - from));
    if (semicolon == std::string::npos) break;
    from = semicolon + 1;
  }
  return out;
}

json spec_for(const HttpRequest& sent, const Intended& intended, const std::string& endpoint, const std::string& bucket,
              const Credentials& credentials, const std::string& region) {
  json headers = json::object();
  for (const auto& name : signed_headers(sent.header("authorization"))) headers[name] = sent.header(name);
  json params = json::array();
  for (const auto& [name, value] : intended.params) params.push_back({name, value});
  return {{"method", intended.method},
          {"endpoint", endpoint},
          {"bucket", bucket},
          {"key", intended.key},
          {"params", params},
          {"headers", headers},
          {"access_key", credentials.key_id},
          {"secret_key", credentials.secret},
          {"token", credentials.token},
          {"region", region}};
}

json run_reference(const json& specs) {
  TempDir dir;
  const auto input = dir.write("specs.json", specs.dump());
  const std::string command = "/usr/bin/python3 " + kReference + " < " + input.string();
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string out;
  char buf[4096];
  size_t n;
  while (pipe && (n = fread(buf, 1, sizeof buf, pipe.get())) > 0) out.append(buf, n);
  return json::parse(out);
}

const std::vector<std::string> kKeys = {
    "data set/ü+=.jpg",               // space, unicode, '+', '='
    "data set/a&b?c#d;e:f@g,h$.bin",  // query and fragment delimiters inside a key
    "data set/~tilde/star*(paren)!'.x",
    "data set/percent%20literal",  // '%' is a character, not an escape
    "data set/dir//double",
};
const std::string kPrefix = "data set/";
const std::string kToken = "1/a+b=c==";  // what S3 tokens look like: base64 with '/', '+', '='

std::string listing(bool truncated) {
  std::string xml = "<ListBucketResult><Name>sign-test</Name>";
  xml += truncated ? "<IsTruncated>true</IsTruncated><NextContinuationToken>" + kToken + "</NextContinuationToken>"
                   : "<IsTruncated>false</IsTruncated>";
  for (const auto& key : kKeys) {
    std::string escaped;
    for (char c : key) escaped += c == '&' ? std::string("&amp;") : std::string(1, c);
    if (!truncated) xml += "<Contents><Key>" + escaped + "</Key><Size>1</Size><ETag>\"e\"</ETag></Contents>";
  }
  return xml + "</ListBucketResult>";
}

class S3Signing : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (auto why = reference_unavailable()) GTEST_SKIP() << *why;
  }
};

TEST_P(S3Signing, LibcurlSignsWhatBotocoreSigns) {
  const bool with_token = GetParam();
  const Credentials credentials{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                with_token ? "FQoGZXIvYXdzE//token+with/odd=chars" : ""};
  FaultProxy proxy(0, [](const HttpRequest& request, int index) {
    if (index == 0) return Fault::respond(200, listing(true));
    if (index == 1) return Fault::respond(200, listing(false));
    return Fault::respond(request.header("range").empty() ? 200 : 206, "x");
  });
  S3Options options;
  options.url = "s3://sign-test/" + kPrefix;
  options.endpoint = proxy.endpoint();
  options.region = "eu-central-1";
  options.env = {{"AWS_ACCESS_KEY_ID", credentials.key_id}, {"AWS_SECRET_ACCESS_KEY", credentials.secret}};
  if (with_token) options.env["AWS_SESSION_TOKEN"] = credentials.token;

  auto source = open_s3_source(options);
  const auto samples = source->list();
  ASSERT_EQ(samples.size(), kKeys.size());
  std::vector<Intended> intended = {
      {"GET", "", {{"list-type", "2"}, {"max-keys", "1000"}, {"prefix", kPrefix}}},
      {"GET", "", {{"list-type", "2"}, {"max-keys", "1000"}, {"prefix", kPrefix}, {"continuation-token", kToken}}},
  };
  std::vector<std::byte> out;
  for (const auto& s : samples) {
    source->stat(s);
    source->open(s);
    source->read(s, out);
    intended.push_back({"HEAD", s.key, {}});
    intended.push_back({"GET", s.key, {}});
    intended.push_back({"GET", s.key, {}});
  }

  const auto sent = proxy.requests();
  ASSERT_EQ(sent.size(), intended.size());
  json specs = json::array();
  for (size_t i = 0; i < sent.size(); ++i) {
    SCOPED_TRACE(sent[i].method + " " + sent[i].target);
    EXPECT_EQ(sent[i].method, intended[i].method);
    EXPECT_EQ(sent[i].header("x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
    auto names = signed_headers(sent[i].header("authorization"));
    for (const char* required : {"host", "x-amz-content-sha256", "x-amz-date"}) {
      EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required << " is not signed";
    }
    const bool token_signed = std::find(names.begin(), names.end(), "x-amz-security-token") != names.end();
    EXPECT_EQ(token_signed, with_token);
    if (with_token) {
      EXPECT_EQ(sent[i].header("x-amz-security-token"), credentials.token);
    }
    specs.push_back(spec_for(sent[i], intended[i], proxy.endpoint(), "sign-test", credentials, "eu-central-1"));
  }

  const auto reference = run_reference(specs);
  ASSERT_EQ(reference.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    SCOPED_TRACE(sent[i].method + " " + sent[i].target);
    EXPECT_EQ(sent[i].target, reference[i]["target"].get<std::string>()) << "the URL encoding differs from botocore's";
    EXPECT_EQ(sent[i].header("authorization"), reference[i]["authorization"].get<std::string>())
        << "botocore's canonical request:\n"
        << reference[i]["canonical_request"].get<std::string>();
  }

  // The comparison can fail: another secret, or another query, gives
  // another signature.
  auto wrong_secret = specs[2];
  wrong_secret["secret_key"] = "another-secret";
  auto other_query = specs[2];
  other_query["params"] = json::array({json::array({"x", "y"})});
  const auto controls = run_reference(json::array({wrong_secret, other_query}));
  EXPECT_NE(sent[2].header("authorization"), controls[0]["authorization"].get<std::string>());
  EXPECT_NE(sent[2].header("authorization"), controls[1]["authorization"].get<std::string>());
}

INSTANTIATE_TEST_SUITE_P(Credentials, S3Signing, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "SessionToken" : "LongTermKeys";
                         });

}  // namespace
}  // namespace gpufeed::loader
