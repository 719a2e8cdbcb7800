// The S3 sample store: ListObjectsV2 (paged) for list(), HEAD for stat(), a
// 1-byte ranged GET for open() (time to first byte) and a whole-object GET
// for read(). SampleInfo.key is the full object key; version is its ETag.
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "gpufeed/s3/s3_source.hpp"
#include "s3_client.hpp"
#include "s3_errors.hpp"
#include "s3_xml.hpp"

extern char** environ;

namespace gpufeed::loader {
namespace {

class S3Source final : public SampleSource {
 public:
  explicit S3Source(const s3::S3Config& config) : client_(config) {}

  std::string kind() const override { return "s3"; }
  std::string storage_type() const override { return "s3"; }
  std::string describe() const override {
    const auto& c = client_.config();
    return fmt::format("{} at {} (region {})", c.location(), c.endpoint.url(), c.region);
  }

  std::vector<SampleInfo> list() override {
    const auto& c = client_.config();
    std::vector<SampleInfo> samples;
    std::vector<std::byte> body;
    std::string token;
    for (;;) {
      s3::Request request;
      request.what = "LIST " + c.location();
      request.query = {{"list-type", "2"}, {"max-keys", std::to_string(c.requests.list_page_size)}};
      if (!c.url.prefix.empty()) request.query.emplace_back("prefix", c.url.prefix);
      if (!token.empty()) request.query.emplace_back("continuation-token", token);
      const auto response = client_.perform(request, body);
      if (response.status != 200) {
        s3::throw_s3_error(client_, request, response, s3::as_text(body), s3::Subject::Listing);
      }
      const auto page = parse_page(request, body);
      for (const auto& object : page.objects) {
        // Zero-byte "dir/" keys are folder markers made by consoles, not samples.
        if (object.size == 0 && object.key.ends_with('/')) continue;
        samples.push_back({object.key, object.size, object.etag});
      }
      if (!page.truncated) break;
      if (page.next_token.empty() || page.next_token == token) {
        throw runtime_error(fmt::format("S3 {} at {}: the listing says it continues but gives no new continuation "
                                        "token",
                                        request.what, c.endpoint.url()),
                            "the endpoint does not implement ListObjectsV2 paging correctly");
      }
      token = page.next_token;
    }
    if (samples.empty()) {
      throw usage_error(fmt::format("no objects under {} (at {})", c.location(), c.endpoint.url()),
                        "check the prefix: it is a plain key prefix, so s3://bucket/train/ lists the keys that "
                        "start with 'train/'");
    }
    return samples;
  }

  void stat(const SampleInfo& s) override {
    std::vector<std::byte> body;
    auto request = object_request("HEAD", s);
    const auto response = client_.perform(request, body);
    if (response.status != 200) fail(request, response, body);
  }

  void open(const SampleInfo& s) override {
    std::vector<std::byte> body;
    auto request = object_request("GET", s);
    // An empty object has no first byte to ask for: its whole GET costs the
    // same. (S3 answers a range on it with 416; s3rver promises a byte and
    // never sends it.)
    if (s.size > 0) request.range = {0, 0};
    const auto response = client_.perform(request, body);
    // 416: listed with bytes but empty now; it is there all the same.
    if (response.status != 200 && response.status != 206 && response.status != 416) fail(request, response, body);
  }

  void read(const SampleInfo& s, std::vector<std::byte>& out) override {
    if (s.size > 0) out.reserve(s.size);
    auto request = object_request("GET", s);
    const auto response = client_.perform(request, out);
    if (response.status != 200) {
      std::vector<std::byte> error_body;
      error_body.swap(out);
      fail(request, response, error_body);
    }
  }

 private:
  s3::Request object_request(const char* method, const SampleInfo& s) const {
    s3::Request request;
    request.method = method;
    request.key = s.key;
    request.what = fmt::format("{} {}", method, client_.config().object_url(s.key));
    return request;
  }

  [[noreturn]] void fail(const s3::Request& request, const s3::Response& response,
                         const std::vector<std::byte>& body) const {
    s3::throw_s3_error(client_, request, response, s3::as_text(body), s3::Subject::Object);
  }

  s3::ListPage parse_page(const s3::Request& request, const std::vector<std::byte>& body) const {
    try {
      return s3::parse_list_page(s3::as_text(body));
    } catch (const s3::XmlError& e) {
      throw runtime_error(fmt::format("S3 {} at {} returned a listing gpufeed cannot read: {}", request.what,
                                      client_.config().endpoint.url(), client_.redact(e.what())),
                          "check that the endpoint (--s3-endpoint) is an S3 service");
    }
  }

  s3::S3Client client_;
};

}  // namespace

std::map<std::string, std::string> environment_map() {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const auto equals = text.find('=');
    if (equals != std::string_view::npos) env.emplace(text.substr(0, equals), text.substr(equals + 1));
  }
  return env;
}

std::unique_ptr<SampleSource> open_s3_source(const S3Options& options) {
  return std::make_unique<S3Source>(s3::resolve_config(options));
}

}  // namespace gpufeed::loader
