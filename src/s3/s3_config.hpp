#pragma once
// Everything the S3 store needs before its first request, resolved once from
// S3Options and the (injected) environment: bucket and prefix, endpoint and
// addressing style, region, credentials, limits. Credentials live only here
// and in the libcurl options set from them; nothing prints them.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "gpufeed/s3/s3_source.hpp"
#include "s3_url.hpp"

namespace gpufeed::loader::s3 {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty unless temporary credentials
  // Where they came from, for messages: "the environment (AWS_ACCESS_KEY_ID)"
  // or "profile 'x' in /home/u/.aws/credentials". Never a value.
  std::string source;
};

// An INI file as the AWS tools read it: section -> key (lower-case) -> value.
// Only whole-line comments ('#', ';'); indented continuation lines (nested
// settings such as "s3 =\n  addressing_style = path") are skipped.
using IniSections = std::map<std::string, std::map<std::string, std::string>>;
IniSections parse_ini(std::string_view text);

// Environment credentials unless a profile was asked for explicitly, else the
// profile (option, AWS_PROFILE, "default") from the shared credentials file
// (AWS_SHARED_CREDENTIALS_FILE, else HOME/.aws/credentials). Throws
// usage_error naming the variables and the file when none are found.
Credentials resolve_credentials(const S3Options& options);

// The option, AWS_REGION, AWS_DEFAULT_REGION, the profile's "region" in the
// config file (AWS_CONFIG_FILE, else HOME/.aws/config), else us-east-1.
std::string resolve_region(const S3Options& options);

struct S3Config {
  S3Url url;
  Endpoint endpoint;
  bool path_style = true;
  std::string region;
  Credentials credentials;
  S3RequestPolicy requests;
  std::uint64_t retry_seed = 0;

  // "s3://bucket/prefix" and "s3://bucket/key" as users write them.
  std::string location() const;
  std::string object_url(std::string_view key) const;
};

// Validates the options and resolves the rest. Throws usage_error.
S3Config resolve_config(const S3Options& options);

}  // namespace gpufeed::loader::s3
