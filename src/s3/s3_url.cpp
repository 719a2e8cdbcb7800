#include "s3_url.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "gpufeed/s3/s3_source.hpp"

namespace gpufeed::loader {

namespace {

constexpr std::string_view kScheme = "s3://";
constexpr std::string_view kUrlHint = "write the dataset as s3://BUCKET or s3://BUCKET/PREFIX";

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         });
}

// Letters, digits, '.', '-' and (legacy us-east-1 buckets) '_': anything else
// cannot name a bucket, so it is a typo worth stopping for before any request.
bool valid_bucket_name(std::string_view bucket) {
  if (bucket.size() < 3 || bucket.size() > 255) return false;
  return std::all_of(bucket.begin(), bucket.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
  });
}

}  // namespace

S3Url parse_s3_url(std::string_view url) {
  if (!starts_with_ignoring_case(url, kScheme)) {
    throw usage_error(fmt::format("dataset {} is not an S3 URL (it must start with s3://)", url),
                      std::string(kUrlHint));
  }
  const std::string_view rest = url.substr(kScheme.size());
  const auto slash = rest.find('/');
  S3Url parsed;
  parsed.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) parsed.prefix = std::string(rest.substr(slash + 1));
  if (parsed.bucket.empty()) {
    throw usage_error(fmt::format("S3 URL {} names no bucket", url), std::string(kUrlHint));
  }
  if (!valid_bucket_name(parsed.bucket)) {
    throw usage_error(fmt::format("S3 URL {}: '{}' is not a valid bucket name", url, parsed.bucket),
                      "bucket names are 3 to 63 lower-case letters, digits, dots and hyphens");
  }
  return parsed;
}

namespace s3 {

std::string uri_encode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() * 3);
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0x0f]);
    }
  }
  return out;
}

std::string canonical_query(const Query& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query) encoded.emplace_back(uri_encode(name, false), uri_encode(value, false));
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += name;
    out.push_back('=');
    out += value;
  }
  return out;
}

Endpoint parse_endpoint(std::string_view url) {
  constexpr std::string_view kHint =
      "give the endpoint as http://HOST:PORT or https://HOST, e.g. http://127.0.0.1:9000";
  if (url.find('@') != std::string_view::npos) {
    // Not echoed: whatever precedes '@' may be a secret.
    throw usage_error("the S3 endpoint contains a user name ('@'); credentials do not belong in the endpoint",
                      "give credentials through AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials");
  }
  Endpoint endpoint;
  std::string_view rest;
  if (starts_with_ignoring_case(url, "https://")) {
    endpoint.scheme = "https";
    rest = url.substr(8);
  } else if (starts_with_ignoring_case(url, "http://")) {
    endpoint.scheme = "http";
    rest = url.substr(7);
  } else {
    throw usage_error(fmt::format("S3 endpoint {} does not start with http:// or https://", url), std::string(kHint));
  }
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty()) throw usage_error(fmt::format("S3 endpoint {} names no host", url), std::string(kHint));
  if (rest.find_first_of("/?#") != std::string_view::npos) {
    throw usage_error(fmt::format("S3 endpoint {} has a path or query; gpufeed adds the bucket and key itself", url),
                      std::string(kHint));
  }
  if (rest.find_first_of(" \t\r\n") != std::string_view::npos) {
    throw usage_error(fmt::format("S3 endpoint {} contains white space", url), std::string(kHint));
  }
  endpoint.host = std::string(rest);
  return endpoint;
}

std::string request_url(const Endpoint& endpoint, bool path_style, std::string_view bucket, std::string_view key,
                        const Query& query) {
  std::string url;
  if (path_style) {
    url = endpoint.url() + "/" + std::string(bucket);
    if (!key.empty()) url += "/" + uri_encode(key, true);
  } else {
    url = endpoint.scheme + "://" + std::string(bucket) + "." + endpoint.host + "/" + uri_encode(key, true);
  }
  if (!query.empty()) url += "?" + canonical_query(query);
  return url;
}

bool virtual_host_compatible(std::string_view bucket) {
  return std::all_of(bucket.begin(), bucket.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-';
  });
}

}  // namespace s3
}  // namespace gpufeed::loader
