#include "stores.hpp"

#include <fmt/format.h>

#include <chrono>

#include "gpufeed/loader/local_source.hpp"
#include "gpufeed/s3/s3_source.hpp"
#include "gpufeed/loader/synthetic_source.hpp"
#include "option_values.hpp"

namespace gpufeed::cli {
namespace {

using app::DataOptions;

bool never_given(const DataOptions&) { return false; }

// synthetic:PRESET[,key=value...]: an in-process store with a preset's latency.
StoreKind synthetic_kind() {
  return {"synthetic", "synthetic:PRESET", "", [](const std::string& d) { return loader::is_synthetic_spec(d); }, nullptr,
          never_given, [](const DataOptions& o, const Io&) -> std::unique_ptr<loader::SampleSource> {
            return loader::make_synthetic_source(loader::parse_synthetic_spec(o.data));
          }};
}

StoreKind s3_kind() {
  return {"S3", "s3://bucket/prefix", "--s3-*", [](const std::string& d) { return d.rfind("s3://", 0) == 0; },
          [](CLI::App& cmd, DataOptions& o) {
            cmd.add_option("--s3-endpoint", o.s3_endpoint, "S3-compatible endpoint URL (default: AWS)")->group("S3");
            cmd.add_option("--s3-region", o.s3_region, "Region (default: AWS_REGION, profile, us-east-1)")
                ->group("S3");
            cmd.add_option("--s3-profile", o.s3_profile, "Profile in ~/.aws/credentials")->group("S3");
            cmd.add_option("--s3-connections", o.s3_connections, "Requests in flight at most")
                ->check(whole_in("--s3-connections", {1, 1024, "connections", false, "64"}))
                ->default_val(64)
                ->group("S3");
            cmd.add_option("--s3-max-attempts", o.s3_max_attempts, "Tries per request, the first one included")
                ->check(whole_in("--s3-max-attempts", {1, 100, "attempts", false, "5"}))
                ->default_val(5)
                ->group("S3");
            cmd.add_option("--s3-connect-timeout", o.s3_connect_timeout_s, "Seconds to establish a connection")
                ->check(real_in("--s3-connect-timeout", {0, 3600, "seconds", true, "5"}))
                ->default_val(5)
                ->group("S3");
            cmd.add_option("--s3-request-timeout", o.s3_request_timeout_s,
                           "Whole seconds an attempt may receive nothing before it is abandoned")
                ->check(whole_in("--s3-request-timeout", {1, 86400, "seconds", false, "30"}))
                ->default_val(30)
                ->group("S3");
          },
          [](const DataOptions& o) {
            const DataOptions defaults;
            return !o.s3_endpoint.empty() || !o.s3_region.empty() || !o.s3_profile.empty() ||
                   o.s3_max_attempts != defaults.s3_max_attempts ||
                   o.s3_connect_timeout_s != defaults.s3_connect_timeout_s ||
                   o.s3_request_timeout_s != defaults.s3_request_timeout_s;
          },
          [](const DataOptions& o, const Io&) {
            loader::S3Options s3;
            s3.url = o.data;
            s3.endpoint = o.s3_endpoint;
            s3.region = o.s3_region;
            s3.profile = o.s3_profile;
            s3.requests.max_connections = o.s3_connections;
            s3.requests.max_attempts = o.s3_max_attempts;
            s3.requests.connect_timeout = std::chrono::milliseconds(static_cast<long long>(o.s3_connect_timeout_s * 1000));
            s3.requests.request_timeout = std::chrono::seconds(o.s3_request_timeout_s);
            s3.env = loader::environment_map();
            return loader::open_s3_source(s3);
          }};
}

// A directory or a manifest file (one path per line) on any mounted file system.
StoreKind local_kind() {
  return {"local", "a directory, a manifest file (one path per line)", "", [](const std::string&) { return true; },
          nullptr, never_given, [](const DataOptions& o, const Io& io) {
            return loader::open_local_source({o.data, 32, io.host.root / "proc/self/mountinfo"});
          }};
}

}  // namespace

const std::vector<StoreKind>& store_kinds() {
  static const std::vector<StoreKind> kinds = {synthetic_kind(), s3_kind(), local_kind()};
  return kinds;
}

const StoreKind& store_kind_of(const std::string& data) {
  for (const auto& k : store_kinds()) {
    if (k.matches(data)) return k;
  }
  return store_kinds().back();
}

std::string data_specs() {
  // Most common first: the reverse of the matching order.
  const auto& kinds = store_kinds();
  std::string out;
  for (size_t i = kinds.size(); i-- > 0;) out += (out.empty() ? "" : i == 0 ? " or " : ", ") + kinds[i].spec;
  return out;
}

void add_store_options(CLI::App& cmd, DataOptions& data, bool caches) {
  for (const auto& k : store_kinds()) {
    if (k.add_options) k.add_options(cmd, data);
  }
  if (!caches) return;
  cmd.add_option("--cache-mem", data.cache_mem, "In-memory LRU cache tier of this size (e.g. 2GiB)")
      ->check(size_value("--cache-mem"))->type_name("SIZE")->group("Cache");
  cmd.add_option("--cache-dir", data.cache_dir, "Local SSD cache tier in this directory")->group("Cache");
  cmd.add_option("--cache-size", data.cache_size, "Size bound of the SSD tier")
      ->check(size_value("--cache-size"))->default_val("10GiB")->type_name("SIZE")->group("Cache");
}

}  // namespace gpufeed::cli
