#include "s3_config.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "gpufeed/input_file.hpp"

namespace gpufeed::loader::s3 {
namespace {

constexpr std::string_view kCredentialsHint =
    "export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials), or add "
    "the profile to the shared credentials file (AWS_SHARED_CREDENTIALS_FILE overrides its path; AWS_PROFILE or "
    "--s3-profile picks the profile)";

std::string env_value(const S3Options& options, const std::string& name) {
  const auto it = options.env.find(name);
  return it == options.env.end() ? std::string() : it->second;
}

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

std::string lower(std::string text) {
  for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string home_dir(const S3Options& options) {
  return options.home.empty() ? env_value(options, "HOME") : options.home;
}

// The file named by `variable`, else HOME/.aws/`name`; empty when neither is known.
std::string aws_file(const S3Options& options, const std::string& variable, const std::string& name) {
  if (auto path = env_value(options, variable); !path.empty()) return path;
  const auto home = home_dir(options);
  return home.empty() ? std::string() : home + "/.aws/" + name;
}

// nullopt when the file is not there; a directory or device in its place is
// a usage error naming it (read as empty, it would hide every profile).
std::optional<std::string> read_text(const std::string& path, std::string_view what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  return read_input_file(path, {what, "point AWS_SHARED_CREDENTIALS_FILE / AWS_CONFIG_FILE at a file, or unset it"});
}

std::string profile_name(const S3Options& options) {
  if (!options.profile.empty()) return options.profile;
  if (auto name = env_value(options, "AWS_PROFILE"); !name.empty()) return name;
  return "default";
}

Credentials from_environment(const S3Options& options) {
  Credentials c;
  c.access_key_id = env_value(options, "AWS_ACCESS_KEY_ID");
  c.secret_access_key = env_value(options, "AWS_SECRET_ACCESS_KEY");
  c.session_token = env_value(options, "AWS_SESSION_TOKEN");
  c.source = "the environment (AWS_ACCESS_KEY_ID)";
  return c;
}

Credentials from_profile(const S3Options& options) {
  const auto profile = profile_name(options);
  const auto path = aws_file(options, "AWS_SHARED_CREDENTIALS_FILE", "credentials");
  if (path.empty()) {
    throw usage_error(
        "no S3 credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set, and neither "
        "AWS_SHARED_CREDENTIALS_FILE nor HOME is set to find the credentials file",
        std::string(kCredentialsHint));
  }
  const auto text = read_text(path, "the S3 credentials file");
  if (!text) {
    throw usage_error(fmt::format("no S3 credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set, and "
                                  "the credentials file {} cannot be read",
                                  path),
                      std::string(kCredentialsHint));
  }
  const auto sections = parse_ini(*text);
  const auto section = sections.find(profile);
  if (section == sections.end()) {
    throw usage_error(fmt::format("no S3 credentials: profile '{}' is not in {}{}", profile, path,
                                  options.profile.empty() ? " and AWS_ACCESS_KEY_ID is not set" : ""),
                      std::string(kCredentialsHint));
  }
  auto field = [&](const char* name) {
    const auto it = section->second.find(name);
    return it == section->second.end() ? std::string() : it->second;
  };
  Credentials c;
  c.access_key_id = field("aws_access_key_id");
  c.secret_access_key = field("aws_secret_access_key");
  c.session_token = field("aws_session_token");
  c.source = fmt::format("profile '{}' in {}", profile, path);
  for (const auto* name : {"aws_access_key_id", "aws_secret_access_key"}) {
    if (field(name).empty()) {
      throw usage_error(fmt::format("S3 credentials: profile '{}' in {} has no {}", profile, path, name),
                        std::string(kCredentialsHint));
    }
  }
  return c;
}

void check_range(const char* name, long long value, long long low, long long high) {
  if (value < low || value > high) {
    throw usage_error(fmt::format("S3 option {} = {} is out of range", name, value),
                      fmt::format("give a value from {} to {}", low, high));
  }
}

std::uint64_t random_seed() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

}  // namespace

IniSections parse_ini(std::string_view text) {
  IniSections sections;
  std::map<std::string, std::string>* current = nullptr;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && (line[0] == ' ' || line[0] == '\t')) continue;  // a continuation line
    const auto content = trim(line);
    if (content.empty() || content[0] == '#' || content[0] == ';') continue;
    if (content.front() == '[') {
      const auto close = content.find(']');
      current = close == std::string::npos ? nullptr : &sections[trim(content.substr(1, close - 1))];
      continue;
    }
    const auto equals = content.find('=');
    if (current == nullptr || equals == std::string::npos) continue;
    (*current)[lower(trim(content.substr(0, equals)))] = trim(content.substr(equals + 1));
  }
  return sections;
}

Credentials resolve_credentials(const S3Options& options) {
  if (options.profile.empty()) {
    const bool have_key = !env_value(options, "AWS_ACCESS_KEY_ID").empty();
    const bool have_secret = !env_value(options, "AWS_SECRET_ACCESS_KEY").empty();
    if (have_key && have_secret) return from_environment(options);
    if (have_key != have_secret) {
      throw usage_error(fmt::format("S3 credentials: {} is set but {} is not",
                                    have_key ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                                    have_key ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID"),
                        "set both, or unset both to use the shared credentials file");
    }
  }
  return from_profile(options);
}

std::string resolve_region(const S3Options& options) {
  std::string region = options.region;
  for (const char* variable : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    if (region.empty()) region = env_value(options, variable);
  }
  if (region.empty()) {
    const auto path = aws_file(options, "AWS_CONFIG_FILE", "config");
    if (const auto text = path.empty() ? std::nullopt : read_text(path, "the AWS config file")) {
      const auto sections = parse_ini(*text);
      const auto profile = profile_name(options);
      for (const auto& name : {"profile " + profile, profile}) {
        const auto section = sections.find(name);
        if (region.empty() && section != sections.end() && section->second.count("region")) {
          region = section->second.at("region");
        }
      }
    }
  }
  if (region.empty()) region = "us-east-1";
  const bool valid = std::all_of(region.begin(), region.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-';
  });
  if (!valid) {
    throw usage_error(fmt::format("S3 region '{}' is not a region name", region),
                      "give a region such as us-east-1 or eu-west-1 (--s3-region, AWS_REGION)");
  }
  return region;
}

std::string S3Config::location() const {
  return url.prefix.empty() ? "s3://" + url.bucket : "s3://" + url.bucket + "/" + url.prefix;
}

std::string S3Config::object_url(std::string_view key) const { return "s3://" + url.bucket + "/" + std::string(key); }

S3Config resolve_config(const S3Options& options) {
  S3Config config;
  config.url = parse_s3_url(options.url);
  check_range("max_connections", options.requests.max_connections, 1, 1024);
  check_range("max_attempts", options.requests.max_attempts, 1, 100);
  check_range("list_page_size", options.requests.list_page_size, 1, 1000);
  check_range("connect_timeout (ms)", options.requests.connect_timeout.count(), 1, 3'600'000);
  check_range("request_timeout (ms)", options.requests.request_timeout.count(), 1, 3'600'000);
  check_range("retry_base (ms)", options.requests.retry_base.count(), 0, 3'600'000);
  check_range("retry_cap (ms)", options.requests.retry_cap.count(), 0, 3'600'000);
  config.region = resolve_region(options);

  std::string endpoint = options.endpoint;
  for (const char* variable : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    if (endpoint.empty()) endpoint = env_value(options, variable);
  }
  if (endpoint.empty()) {
    // AWS itself: virtual-hosted addressing, unless the bucket name cannot be
    // a host name under TLS (dots, capitals, underscores).
    const bool china = config.region.rfind("cn-", 0) == 0;
    config.endpoint = parse_endpoint(fmt::format("https://s3.{}.amazonaws.com{}", config.region, china ? ".cn" : ""));
    config.path_style = !virtual_host_compatible(config.url.bucket);
  } else {
    config.endpoint = parse_endpoint(endpoint);
    config.path_style = true;  // what MinIO, Ceph RGW and s3rver all serve
  }

  config.credentials = resolve_credentials(options);
  config.requests = options.requests;
  config.retry_seed = options.retry_seed ? *options.retry_seed : random_seed();
  return config;
}

}  // namespace gpufeed::loader::s3
