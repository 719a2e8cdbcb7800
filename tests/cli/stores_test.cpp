// The store registry: which kind a --data spec is, and the option groups it
// registers for bench, tune and check.
#include "stores.hpp"

#include <gtest/gtest.h>

namespace gpufeed::cli {
namespace {

TEST(Stores, EachSpecGoesToItsKindAndAnyPathToLocalFiles) {
  EXPECT_EQ(store_kind_of("s3://bucket/train").name, "S3");
  EXPECT_EQ(store_kind_of("synthetic:s3fs,files=10").name, "synthetic");
  EXPECT_EQ(store_kind_of("/mnt/data/train").name, "local");
  EXPECT_EQ(store_kind_of("manifest.txt").name, "local");
  EXPECT_EQ(store_kinds().back().name, "local") << "the catch-all kind must match last";
}

TEST(Stores, TheDataHelpNamesEveryKind) {
  const std::string specs = data_specs();
  for (const auto& k : store_kinds()) EXPECT_NE(specs.find(k.spec), std::string::npos) << k.name << ": " << specs;
}

TEST(Stores, OneRegistrationGivesEveryStoresOptions) {
  CLI::App app;
  app::DataOptions data;
  add_store_options(app, data, true);
  // CLI11 takes a vector of arguments last first.
  app.parse(std::vector<std::string>{"2GiB", "--cache-mem", "9", "--s3-connections", "eu-west-1", "--s3-region"});
  EXPECT_EQ(data.s3_region, "eu-west-1");
  EXPECT_EQ(data.s3_connections, 9);
  EXPECT_EQ(data.cache_mem, "2GiB");
  for (const auto& k : store_kinds()) EXPECT_EQ(k.options_given(data), k.name == "S3") << k.name;

  app::DataOptions retries;
  CLI::App again;
  add_store_options(again, retries, false);
  again.parse(std::vector<std::string>{"2", "--s3-request-timeout", "0.5", "--s3-connect-timeout", "2", "--s3-max-attempts"});
  EXPECT_EQ(retries.s3_max_attempts, 2);
  EXPECT_DOUBLE_EQ(retries.s3_connect_timeout_s, 0.5);
  EXPECT_EQ(retries.s3_request_timeout_s, 2);
  EXPECT_TRUE(store_kind_of("s3://b").options_given(retries)) << "a changed default is an S3 option given";

  CLI::App without_caches;
  app::DataOptions other;
  add_store_options(without_caches, other, false);
  EXPECT_EQ(without_caches.get_option_no_throw("--cache-mem"), nullptr);
  EXPECT_NE(without_caches.get_option_no_throw("--s3-endpoint"), nullptr);
}

}  // namespace
}  // namespace gpufeed::cli
