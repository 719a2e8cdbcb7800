#include "s3_client.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "gpufeed/version.hpp"
#include "s3_xml.hpp"

namespace gpufeed::loader::s3 {

// What one try produced: the transport result and the response headers.
struct S3Client::Attempt {
  std::vector<std::byte>* body = nullptr;
  Response response;
  CURLcode code = CURLE_OK;
  long os_errno = 0;
  bool request_sent = false;
  char error[CURL_ERROR_SIZE] = {};
};

namespace {

using HeaderList = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* body = static_cast<std::vector<std::byte>*>(user);
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  body->insert(body->end(), bytes, bytes + size * count);
  return size * count;
}

bool header_is(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line[name.size()] != ':') return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  }
  return true;
}

std::string header_value(std::string_view line) {
  auto value = line.substr(line.find(':') + 1);
  const auto first = value.find_first_not_of(" \t");
  const auto last = value.find_last_not_of(" \t\r\n");
  return first == std::string_view::npos ? std::string() : std::string(value.substr(first, last - first + 1));
}

struct HeaderSink {
  Response* response;
  std::vector<std::byte>* body;
};

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* sink = static_cast<HeaderSink*>(user);
  const std::string_view line(data, size * count);
  if (line.starts_with("HTTP/")) {
    *sink->response = {};  // a new response (after a 100 Continue, say)
  } else if (header_is(line, "etag")) {
    sink->response->etag = unquote_etag(header_value(line));
  } else if (header_is(line, "content-length")) {
    try {
      sink->response->content_length = std::stoull(header_value(line));
      // Up to 1 GiB up front: one allocation for the usual sample.
      sink->body->reserve(std::min<std::uint64_t>(*sink->response->content_length, 1ULL << 30));
    } catch (const std::exception&) {
      sink->response->content_length.reset();
    }
  } else if (header_is(line, "x-amz-bucket-region")) {
    sink->response->bucket_region = header_value(line);
  }
  return size * count;
}

bool retryable_transport(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

std::string plural(int n, const char* word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

}  // namespace

S3Client::S3Client(const S3Config& config)
    : config_(config),
      pool_(config.requests.max_connections),
      backoff_(config.requests.retry_base, config.requests.retry_cap, config.retry_seed),
      sigv4_("aws:amz:" + config.region + ":s3") {}

std::string S3Client::redact(std::string text) const {
  const auto& c = config_.credentials;
  for (const auto* secret : {&c.secret_access_key, &c.session_token, &c.access_key_id}) {
    if (secret->empty()) continue;
    for (auto at = text.find(*secret); at != std::string::npos; at = text.find(*secret, at + 3)) {
      text.replace(at, secret->size(), "***");
    }
  }
  return text;
}

void S3Client::attempt_once(CURL* handle, const std::string& url, const Request& request, Attempt& attempt) const {
  // Every option a request depends on is set on every attempt: the pooled
  // handle still carries the previous request's.
  HeaderList headers(nullptr, &curl_slist_free_all);
  auto add_header = [&](const std::string& line) {
    curl_slist* grown = curl_slist_append(headers.get(), line.c_str());
    if (grown == nullptr) throw std::bad_alloc();
    headers.release();
    headers.reset(grown);
  };
  // libcurl's SigV4 signs this header's value as the payload hash but does
  // not send it itself, and S3 refuses a request without it.
  add_header("x-amz-content-sha256: UNSIGNED-PAYLOAD");
  if (!config_.credentials.session_token.empty()) {
    add_header("x-amz-security-token: " + config_.credentials.session_token);
  }
  if (request.range) add_header(fmt::format("Range: bytes={}-{}", request.range->first, request.range->second));
  if (request.method == "PUT") {
    add_header("Content-Type: application/octet-stream");
    add_header("Expect:");  // no 100-continue round trip
  }

  HeaderSink sink{&attempt.response, attempt.body};
  const long stall_seconds = std::max<long>(1, static_cast<long>((config_.requests.request_timeout.count() + 999) / 1000));

  curl_easy_setopt(handle, CURLOPT_URL, url.c_str());
  curl_easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(handle, CURLOPT_PATH_AS_IS, 1L);  // keys such as "a/../b" are names, not paths to tidy
  curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(handle, CURLOPT_USERAGENT, (std::string("gpufeed/") + kVersion).c_str());
  curl_easy_setopt(handle, CURLOPT_AWS_SIGV4, sigv4_.c_str());
  curl_easy_setopt(handle, CURLOPT_USERNAME, config_.credentials.access_key_id.c_str());
  curl_easy_setopt(handle, CURLOPT_PASSWORD, config_.credentials.secret_access_key.c_str());
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(config_.requests.connect_timeout.count()));
  curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, 0L);
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_TIME, stall_seconds);
  curl_easy_setopt(handle, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, attempt.body);
  curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(handle, CURLOPT_HEADERDATA, &sink);
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, attempt.error);
  curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, nullptr);
  if (request.method == "HEAD") {
    curl_easy_setopt(handle, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(handle, CURLOPT_HTTPGET, 1L);
  }
  if (request.method == "PUT") {
    curl_easy_setopt(handle, CURLOPT_POSTFIELDS, request.upload.data());
    curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.upload.size()));
    curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, "PUT");
  }

  attempt.code = curl_easy_perform(handle);
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &attempt.response.status);
  curl_easy_getinfo(handle, CURLINFO_OS_ERRNO, &attempt.os_errno);
  // Whether it got as far as sending (connect times read 0 on a reused connection).
  long request_bytes = 0;
  curl_easy_getinfo(handle, CURLINFO_REQUEST_SIZE, &request_bytes);
  attempt.request_sent = request_bytes > 0;
  // Nothing may point at this attempt's stack once it is over.
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(handle, CURLOPT_HEADERDATA, nullptr);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, nullptr);
  curl_easy_setopt(handle, CURLOPT_POSTFIELDS, nullptr);
}

namespace {

// Why an attempt failed in transport, in words a user knows.
std::string transport_reason(const S3Config& config, CURLcode code, long os_errno, bool request_sent,
                             const char* error) {
  const std::string detail = *error != '\0' ? std::string(error) : std::string(curl_easy_strerror(code));
  switch (code) {
    case CURLE_COULDNT_CONNECT:
      if (os_errno == ECONNREFUSED) return "connection refused";
      if (os_errno == EHOSTUNREACH || os_errno == ENETUNREACH) return "host unreachable";
      return "could not connect: " + detail;
    case CURLE_COULDNT_RESOLVE_HOST:
      return "cannot resolve the host name";
    case CURLE_OPERATION_TIMEDOUT:
      if (!request_sent) return fmt::format("no connection within {} ms", config.requests.connect_timeout.count());
      return fmt::format("no data for {} ms (request timeout)", config.requests.request_timeout.count());
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
      if (os_errno == ECONNRESET) return "connection reset by the server";
      return detail;
    case CURLE_GOT_NOTHING:
      return "the server closed the connection without answering";
    case CURLE_PARTIAL_FILE:
      return "the connection closed before the whole response arrived";
    default:
      return detail;
  }
}

// "HTTP 503 SlowDown: Please reduce your request rate."
std::string status_reason(long status, std::string_view body) {
  const auto error = parse_error_body(body);
  if (!error || error->code.empty()) return fmt::format("HTTP {}", status);
  if (error->message.empty()) return fmt::format("HTTP {} {}", status, error->code);
  return fmt::format("HTTP {} {}: {}", status, error->code, error->message);
}

}  // namespace

Response S3Client::perform(const Request& request, std::vector<std::byte>& body) {
  const auto url = request_url(config_.endpoint, config_.path_style, config_.url.bucket, request.key, request.query);
  const auto endpoint = config_.endpoint.url();
  for (int attempt_no = 1;; ++attempt_no) {
    body.clear();
    Attempt attempt;
    attempt.body = &body;
    {
      auto lease = pool_.acquire();
      attempt_once(lease.get(), url, request, attempt);
    }
    std::string reason;
    if (attempt.code == CURLE_OK) {
      const auto error = attempt.response.status >= 400 ? parse_error_body(as_text(body)) : std::nullopt;
      if (!retryable_status(attempt.response.status, error ? error->code : std::string())) return attempt.response;
      reason = redact(status_reason(attempt.response.status, as_text(body)));
    } else {
      reason = redact(transport_reason(config_, attempt.code, attempt.os_errno, attempt.request_sent, attempt.error));
      if (!retryable_transport(attempt.code)) {
        throw runtime_error(fmt::format("S3 {} failed: {} ({})", request.what, reason, endpoint),
                            "check the endpoint (--s3-endpoint) and its TLS setup");
      }
    }
    if (attempt_no >= config_.requests.max_attempts) {
      const bool answered = attempt.code == CURLE_OK;
      throw runtime_error(
          fmt::format("S3 {} failed after {}: {} ({})", request.what, plural(attempt_no, "attempt"), reason, endpoint),
          answered ? "the store kept failing; try again later, or lower --s3-max-connections if it asks to slow down"
                   : "check that the S3 endpoint is up and reachable from here (--s3-endpoint)");
    }
    std::this_thread::sleep_for(backoff_.delay(attempt_no));
  }
}

}  // namespace gpufeed::loader::s3
