#pragma once
// The S3 sample store: `s3://bucket/prefix` read over HTTP(S) with libcurl,
// requests signed with AWS Signature Version 4. Works with AWS and with any
// S3-compatible endpoint (MinIO, Ceph RGW, s3rver) through `endpoint`.
// See docs/s3.md for options, the credentials order, retries and messages.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gpufeed/loader/sample_source.hpp"

namespace gpufeed::loader {

// How requests are made: shared by the options a user gives and the
// resolved config the client runs on, so one is copied into the other whole.
struct S3RequestPolicy {
  int max_connections = 16;  // requests in flight at once (and connections kept)
  int max_attempts = 5;      // tries per request, the first included
  std::chrono::milliseconds connect_timeout{5000};
  // An attempt is abandoned when it receives nothing for this long (rounded
  // up to whole seconds: libcurl's low-speed limit), so a stalled server
  // cannot hang a read, while a large object may take as long as it needs.
  std::chrono::milliseconds request_timeout{30000};
  // Capped exponential backoff with full jitter between attempts:
  // sleep uniform(0, min(retry_cap, retry_base * 2^(n-1))) before try n+1.
  std::chrono::milliseconds retry_base{100};
  std::chrono::milliseconds retry_cap{5000};
  int list_page_size = 1000;  // ListObjectsV2 max-keys (S3 caps it at 1000)
};

struct S3Options {
  std::string url;           // s3://bucket/prefix (the prefix is a plain key prefix)
  std::string endpoint;      // "http://127.0.0.1:4569"; empty: AWS_ENDPOINT_URL_S3,
                             // AWS_ENDPOINT_URL, else https://s3.<region>.amazonaws.com
  std::string region;        // empty: AWS_REGION, AWS_DEFAULT_REGION, the profile's
                             // region in ~/.aws/config, else us-east-1
  std::string profile;       // empty: environment credentials, else AWS_PROFILE or "default"
  S3RequestPolicy requests;
  // Seeds the jitter; nullopt seeds from std::random_device so that many
  // ranks retrying at once do not retry in step.
  std::optional<std::uint64_t> retry_seed;
  // The environment to read AWS_* variables from. Tests inject theirs; the
  // CLI passes the real one (environment_map()).
  std::map<std::string, std::string> env;
  std::string home;  // for ~/.aws; empty: env["HOME"]
};

// The parts of an s3:// URL. `prefix` is everything after "bucket/", as given.
struct S3Url {
  std::string bucket;
  std::string prefix;
};

// Parses "s3://bucket" or "s3://bucket/prefix". Throws usage_error naming the
// URL for anything else (no scheme, empty or malformed bucket name).
S3Url parse_s3_url(std::string_view url);

// The process environment as a map, for S3Options::env.
std::map<std::string, std::string> environment_map();

// Resolves credentials, region and endpoint and returns the store. Nothing
// is sent until list()/stat()/open()/read(). Throws usage_error for a bad
// URL or endpoint and for missing credentials (naming the variables and the
// file it looked in).
std::unique_ptr<SampleSource> open_s3_source(const S3Options& options);

}  // namespace gpufeed::loader
