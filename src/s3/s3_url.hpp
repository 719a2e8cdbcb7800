#pragma once
// URL pieces of the S3 store: percent-encoding (RFC 3986 unreserved set, as
// SigV4 wants it), the canonical query string, and the endpoint. libcurl
// signs the path and query exactly as they are sent, so both must already be
// in canonical form here: keys encoded once, query pairs encoded and sorted.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpufeed::loader::s3 {

// Percent-encodes every byte outside A-Z a-z 0-9 - _ . ~ as %XX (upper-case
// hex); '/' is kept when `keep_slash` (object keys in a path).
std::string uri_encode(std::string_view text, bool keep_slash);

// Raw (unencoded) query parameters.
using Query = std::vector<std::pair<std::string, std::string>>;

// "a=1&b=x%2By": names and values encoded, sorted by encoded name then value.
std::string canonical_query(const Query& query);

// An S3 endpoint: "http://127.0.0.1:4569" or "https://s3.eu-west-1.amazonaws.com".
struct Endpoint {
  std::string scheme;  // "http" or "https"
  std::string host;    // host[:port], as given
  std::string url() const { return scheme + "://" + host; }
};

// Validates and splits an endpoint URL; a trailing '/' is dropped. Throws
// usage_error naming it when it has no http(s) scheme, no host, or a path,
// query or user name (credentials never go into URLs).
Endpoint parse_endpoint(std::string_view url);

// The request URL for `key` (empty: the bucket itself), with the query in
// canonical form. Path-style: ENDPOINT/bucket/key; virtual-hosted:
// SCHEME://bucket.HOST/key.
std::string request_url(const Endpoint& endpoint, bool path_style, std::string_view bucket, std::string_view key,
                        const Query& query);

// True when `bucket` can be a DNS label under TLS (virtual-hosted style).
bool virtual_host_compatible(std::string_view bucket);

}  // namespace gpufeed::loader::s3
