// Resolving the S3 store's configuration from options and an injected
// environment: credentials order, the shared credentials and config files,
// region, endpoint and addressing style, option limits.
#include <gtest/gtest.h>

#include "gpufeed/s3/s3_source.hpp"
#include "s3_config.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed::loader::s3 {
namespace {

using gpufeed::testing::TempDir;

constexpr const char* kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY";

S3Options base_options() {
  S3Options options;
  options.url = "s3://bucket/prefix";
  options.endpoint = "http://127.0.0.1:4569";
  options.env = {{"AWS_ACCESS_KEY_ID", "AKIDENV"}, {"AWS_SECRET_ACCESS_KEY", kSecret}};
  return options;
}

// The message and hint of the usage error `f` throws.
template <typename F>
std::string usage_error_text(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    return std::string(e.what()) + " | " + e.hint();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(S3Ini, ReadsSectionsKeysAndComments) {
  const auto ini = parse_ini(
      "# comment\n"
      "[default]\n"
      "aws_access_key_id = AKID1\n"
      "AWS_Secret_Access_Key=se=cr#et\n"
      "; another comment\n"
      "[ profile other ]\n"
      "region = eu-west-1\n"
      "s3 =\n"
      "  addressing_style = path\n"
      "\n"
      "[third]\r\n"
      "aws_session_token = tok \r\n"
      "junk line without equals\n");
  ASSERT_EQ(ini.size(), 3u);
  EXPECT_EQ(ini.at("default").at("aws_access_key_id"), "AKID1");
  EXPECT_EQ(ini.at("default").at("aws_secret_access_key"), "se=cr#et");
  EXPECT_EQ(ini.at("profile other").at("region"), "eu-west-1");
  EXPECT_EQ(ini.at("profile other").count("addressing_style"), 0u);
  EXPECT_EQ(ini.at("third").at("aws_session_token"), "tok");
}

TEST(S3Credentials, EnvironmentComesFirst) {
  auto options = base_options();
  options.env["AWS_SESSION_TOKEN"] = "TOKEN";
  const auto c = resolve_credentials(options);
  EXPECT_EQ(c.access_key_id, "AKIDENV");
  EXPECT_EQ(c.secret_access_key, kSecret);
  EXPECT_EQ(c.session_token, "TOKEN");
  EXPECT_EQ(c.source.find(kSecret), std::string::npos);
}

TEST(S3Credentials, HalfAPairIsAUsageError) {
  auto options = base_options();
  options.env.erase("AWS_SECRET_ACCESS_KEY");
  const auto text = usage_error_text([&] { resolve_credentials(options); });
  EXPECT_NE(text.find("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"), std::string::npos) << text;
}

TEST(S3Credentials, ProfileFromTheSharedFile) {
  TempDir home;
  home.write(".aws/credentials",
             "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s1\n"
             "[work]\naws_access_key_id = AKIDWORK\naws_secret_access_key = s2\naws_session_token = t2\n");
  S3Options options = base_options();
  options.env = {{"HOME", home.path().string()}};
  auto c = resolve_credentials(options);
  EXPECT_EQ(c.access_key_id, "AKIDDEFAULT");
  EXPECT_EQ(c.source, "profile 'default' in " + (home / ".aws/credentials").string());

  options.env["AWS_PROFILE"] = "work";
  c = resolve_credentials(options);
  EXPECT_EQ(c.access_key_id, "AKIDWORK");
  EXPECT_EQ(c.session_token, "t2");

  // An explicit profile wins over environment keys; AWS_PROFILE does not.
  options.env["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  options.env["AWS_SECRET_ACCESS_KEY"] = "senv";
  EXPECT_EQ(resolve_credentials(options).access_key_id, "AKIDENV");
  options.profile = "default";
  EXPECT_EQ(resolve_credentials(options).access_key_id, "AKIDDEFAULT");

  // options.home is used when given, and AWS_SHARED_CREDENTIALS_FILE beats both.
  TempDir other;
  other.write("creds", "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = s3\n");
  options = base_options();
  options.env = {{"HOME", "/nonexistent"}};
  options.home = home.path().string();
  EXPECT_EQ(resolve_credentials(options).access_key_id, "AKIDDEFAULT");
  options.env["AWS_SHARED_CREDENTIALS_FILE"] = (other / "creds").string();
  EXPECT_EQ(resolve_credentials(options).access_key_id, "AKIDFILE");
}

TEST(S3Credentials, NoneFoundNamesTheVariablesAndTheFile) {
  TempDir home;
  S3Options options = base_options();
  options.env = {{"HOME", home.path().string()}};
  auto text = usage_error_text([&] { resolve_credentials(options); });
  for (const char* needle : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SHARED_CREDENTIALS_FILE",
                             "/.aws/credentials", "AWS_PROFILE"}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << " not in: " << text;
  }
  EXPECT_NE(text.find(home.path().string()), std::string::npos) << text;

  options.env.clear();  // not even HOME
  text = usage_error_text([&] { resolve_credentials(options); });
  EXPECT_NE(text.find("HOME"), std::string::npos) << text;
}

TEST(S3Credentials, MissingProfileOrFieldIsNamed) {
  TempDir home;
  home.write(".aws/credentials", "[default]\naws_access_key_id = AKID\n");
  S3Options options = base_options();
  options.env = {{"HOME", home.path().string()}};
  auto text = usage_error_text([&] { resolve_credentials(options); });
  EXPECT_NE(text.find("profile 'default'"), std::string::npos) << text;
  EXPECT_NE(text.find("has no aws_secret_access_key"), std::string::npos) << text;
  options.profile = "nope";
  text = usage_error_text([&] { resolve_credentials(options); });
  EXPECT_NE(text.find("profile 'nope' is not in " + (home / ".aws/credentials").string()), std::string::npos) << text;
}

// A directory where the credentials file should be is named as such (read
// as empty, it said "profile 'default' is not in" the directory).
TEST(S3Credentials, ACredentialsPathThatIsADirectoryIsNamed) {
  TempDir home;
  std::filesystem::create_directories(home / "creds.d");
  S3Options options = base_options();
  options.env = {{"AWS_SHARED_CREDENTIALS_FILE", (home / "creds.d").string()}};
  const auto text = usage_error_text([&] { resolve_credentials(options); });
  EXPECT_NE(text.find("the S3 credentials file " + (home / "creds.d").string() + " is a directory"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("profile 'default' is not in"), std::string::npos) << text;
}

TEST(S3Region, OptionThenEnvironmentThenConfigFileThenDefault) {
  TempDir home;
  home.write(".aws/config", "[default]\nregion = ap-south-1\n[profile work]\nregion = eu-north-1\n");
  S3Options options = base_options();
  EXPECT_EQ(resolve_region(options), "us-east-1");
  options.env["HOME"] = home.path().string();
  EXPECT_EQ(resolve_region(options), "ap-south-1");
  options.env["AWS_PROFILE"] = "work";
  EXPECT_EQ(resolve_region(options), "eu-north-1");
  options.env["AWS_DEFAULT_REGION"] = "eu-west-2";
  EXPECT_EQ(resolve_region(options), "eu-west-2");
  options.env["AWS_REGION"] = "eu-west-3";
  EXPECT_EQ(resolve_region(options), "eu-west-3");
  options.region = "us-west-2";
  EXPECT_EQ(resolve_region(options), "us-west-2");
  options.region = "US West";
  const auto text = usage_error_text([&] { resolve_region(options); });
  EXPECT_NE(text.find("'US West'"), std::string::npos) << text;
}

TEST(S3Config, CustomEndpointsArePathStyle) {
  auto config = resolve_config(base_options());
  EXPECT_EQ(config.endpoint.url(), "http://127.0.0.1:4569");
  EXPECT_TRUE(config.path_style);
  EXPECT_EQ(config.location(), "s3://bucket/prefix");
  EXPECT_EQ(config.object_url("a/b"), "s3://bucket/a/b");

  auto options = base_options();
  options.endpoint.clear();
  options.env["AWS_ENDPOINT_URL"] = "http://minio:9000";
  EXPECT_EQ(resolve_config(options).endpoint.url(), "http://minio:9000");
  options.env["AWS_ENDPOINT_URL_S3"] = "http://s3only:9000";
  EXPECT_EQ(resolve_config(options).endpoint.url(), "http://s3only:9000");
}

TEST(S3Config, AwsItselfIsVirtualHostedWhereTheNameAllows) {
  auto options = base_options();
  options.endpoint.clear();
  options.region = "eu-west-1";
  auto config = resolve_config(options);
  EXPECT_EQ(config.endpoint.url(), "https://s3.eu-west-1.amazonaws.com");
  EXPECT_FALSE(config.path_style);
  options.url = "s3://my.dotted.bucket/x";
  EXPECT_TRUE(resolve_config(options).path_style);
  options.region = "cn-north-1";
  EXPECT_EQ(resolve_config(options).endpoint.url(), "https://s3.cn-north-1.amazonaws.com.cn");
}

TEST(S3Config, OptionsOutOfRangeAreUsageErrors) {
  auto options = base_options();
  options.requests.max_connections = 0;
  EXPECT_NE(usage_error_text([&] { resolve_config(options); }).find("max_connections"), std::string::npos);
  options = base_options();
  options.requests.max_attempts = 0;
  EXPECT_NE(usage_error_text([&] { resolve_config(options); }).find("max_attempts"), std::string::npos);
  options = base_options();
  options.requests.list_page_size = 1001;
  EXPECT_NE(usage_error_text([&] { resolve_config(options); }).find("list_page_size"), std::string::npos);
  options = base_options();
  options.requests.connect_timeout = std::chrono::milliseconds(0);
  EXPECT_NE(usage_error_text([&] { resolve_config(options); }).find("connect_timeout"), std::string::npos);
  options = base_options();
  options.url = "s3:/bucket";
  EXPECT_NE(usage_error_text([&] { resolve_config(options); }).find("s3:/bucket"), std::string::npos);
}

TEST(S3Source, DescribesItselfWithoutCredentialsOrRequests) {
  auto options = base_options();
  options.env["AWS_SESSION_TOKEN"] = "SESSIONTOKEN";
  const auto source = open_s3_source(options);  // sends nothing: nothing listens there
  EXPECT_EQ(source->kind(), "s3");
  EXPECT_EQ(source->storage_type(), "s3");
  EXPECT_EQ(source->describe(), "s3://bucket/prefix at http://127.0.0.1:4569 (region us-east-1)");
  for (const char* secret : {kSecret, "AKIDENV", "SESSIONTOKEN"}) {
    EXPECT_EQ(source->describe().find(secret), std::string::npos);
  }
}

TEST(S3Source, EnvironmentMapHoldsTheProcessEnvironment) {
  setenv("GPUFEED_S3_TEST_VARIABLE", "a=b", 1);
  const auto env = environment_map();
  ASSERT_TRUE(env.count("GPUFEED_S3_TEST_VARIABLE"));
  EXPECT_EQ(env.at("GPUFEED_S3_TEST_VARIABLE"), "a=b");
  unsetenv("GPUFEED_S3_TEST_VARIABLE");
}

}  // namespace
}  // namespace gpufeed::loader::s3
