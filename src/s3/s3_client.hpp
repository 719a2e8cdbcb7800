#pragma once
// One S3 request, signed and retried: builds the canonical URL, signs with
// libcurl's SigV4 (CURLOPT_AWS_SIGV4), retries transient failures (5xx,
// SlowDown, timeouts, refused or reset connections) with capped exponential
// backoff and full jitter, and gives up with a one-line runtime error naming
// the request, the attempts, the cause and the endpoint. Thread-safe.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "curl_pool.hpp"
#include "s3_config.hpp"
#include "s3_retry.hpp"
#include "s3_url.hpp"

namespace gpufeed::loader::s3 {

struct Request {
  // GET, HEAD; PUT only from tests (it uploads their fixtures).
  std::string method = "GET";
  // The object key; empty: the bucket itself.
  std::string key;
  // Raw names and values: encoded and sorted when the URL is built.
  Query query;
  // First and last byte, inclusive.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> range;
  // The PUT body.
  std::string_view upload;
  // "GET s3://b/k", for messages.
  std::string what;
};

struct Response {
  long status = 0;
  std::string etag;  // unquoted
  std::optional<std::uint64_t> content_length;
  std::string bucket_region;  // x-amz-bucket-region, sent with wrong-region answers
};

class S3Client {
 public:
  explicit S3Client(const S3Config& config);

  // Sends `request` until it gets an answer that is not worth retrying and
  // returns it, whatever its status; the body (object bytes, or S3's error
  // XML) lands in `body`. Throws gpufeed::Error (runtime) when every attempt
  // failed in transport or with a retryable status, or at once for a failure
  // that retrying cannot fix (a TLS certificate error, say).
  Response perform(const Request& request, std::vector<std::byte>& body);

  // The text with every credential value replaced by "***": for anything
  // that came from outside (S3's messages, libcurl's error text).
  std::string redact(std::string text) const;

  const S3Config& config() const { return config_; }

 private:
  struct Attempt;
  void attempt_once(CURL* handle, const std::string& url, const Request& request, Attempt& attempt) const;

  S3Config config_;
  CurlPool pool_;
  Backoff backoff_;
  std::string sigv4_;  // "aws:amz:REGION:s3"
};

// The body as text (error XML, listings).
inline std::string_view as_text(const std::vector<std::byte>& body) {
  return {reinterpret_cast<const char*>(body.data()), body.size()};
}

}  // namespace gpufeed::loader::s3
