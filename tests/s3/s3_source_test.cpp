// The S3 store against a real S3 server (s3rver): listing with pagination,
// HEAD / ranged GET / GET, keys that need encoding, missing keys and buckets,
// a refused access key, many threads at once, and connection reuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "gpufeed/s3/s3_source.hpp"
#include "support/fault_proxy.hpp"
#include "support/s3rver.hpp"

namespace gpufeed::loader {
namespace {

using testing::FaultProxy;
using testing::reproducible_bytes;
using testing::S3rver;

std::string as_string(const std::vector<std::byte>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// Keys S3 allows and SigV4 must encode right: spaces, unicode, '+', '=', '&'.
const std::vector<std::string> kAwkwardKeys = {"train/a.bin", "train/sub dir/b b.bin", "train/ünïcødé-日本.bin",
                                               "train/plus+equals=amp&.bin", "train/tilde~star*paren(1).bin"};

class S3Store : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = S3rver::unavailable_reason()) GTEST_SKIP() << *why;
    server_ = std::make_unique<S3rver>(std::vector<std::string>{"data"});
  }

  // Uploads the awkward keys (sizes 1000, 1001, ...), an empty object, a
  // folder marker and an object outside the prefix; returns key -> bytes.
  std::map<std::string, std::string> upload_training_set() {
    std::map<std::string, std::string> objects;
    for (unsigned i = 0; i < kAwkwardKeys.size(); ++i) objects[kAwkwardKeys[i]] = reproducible_bytes(1000 + i, i + 1);
    objects["train/empty.bin"] = "";
    std::vector<std::pair<std::string, std::string>> uploads(objects.begin(), objects.end());
    uploads.emplace_back("train/folder/", "");
    uploads.emplace_back("other/x.bin", "not in the dataset");
    server_->put_objects("data", uploads);
    return objects;
  }

  std::unique_ptr<S3rver> server_;
};

TEST_F(S3Store, ListsStatsOpensAndReadsEveryObject) {
  const auto objects = upload_training_set();
  auto source = open_s3_source(server_->options("s3://data/train/"));
  EXPECT_EQ(source->describe(), "s3://data/train/ at " + server_->endpoint() + " (region us-east-1)");

  const auto samples = source->list();
  std::vector<std::string> keys;
  for (const auto& s : samples) keys.push_back(s.key);
  std::vector<std::string> expected;
  for (const auto& [key, bytes] : objects) expected.push_back(key);
  EXPECT_EQ(keys, expected) << "sorted keys under the prefix; no folder marker, nothing outside";

  for (const auto& s : samples) {
    SCOPED_TRACE(s.key);
    const auto& bytes = objects.at(s.key);
    EXPECT_EQ(s.size, bytes.size());
    EXPECT_EQ(s.version.size(), 32u) << "the ETag (an MD5 for single-part uploads): " << s.version;
    source->stat(s);
    source->open(s);
    std::vector<std::byte> out(3, std::byte{7});  // read() replaces what was there
    source->read(s, out);
    EXPECT_EQ(as_string(out), bytes);
  }
  // Different contents, different versions.
  EXPECT_NE(samples[0].version, samples[1].version);
}

TEST_F(S3Store, PagesThroughLongListings) {
  std::vector<std::pair<std::string, std::string>> uploads;
  for (int i = 0; i < 2500; ++i) uploads.emplace_back(fmt::format("many/{:05d}.bin", i), std::to_string(i));
  for (int i = 0; i < 25; ++i) uploads.emplace_back(fmt::format("few/{:02d}", i), "x");
  server_->put_objects("data", uploads);

  // Through a forwarding proxy, to count the pages asked for.
  FaultProxy proxy(server_->port(), [](const testing::HttpRequest&, int) { return testing::Fault::forward(); });
  auto options = testing::s3_test_options("s3://data/many/", proxy.endpoint());
  auto samples = open_s3_source(options)->list();
  ASSERT_EQ(samples.size(), 2500u);
  for (int i = 0; i < 2500; ++i) ASSERT_EQ(samples[i].key, fmt::format("many/{:05d}.bin", i));
  EXPECT_EQ(proxy.requests().size(), 3u) << "1000 + 1000 + 500";

  options.url = "s3://data/few/";
  options.requests.list_page_size = 7;
  samples = open_s3_source(options)->list();
  ASSERT_EQ(samples.size(), 25u);
  const auto requests = proxy.requests();
  ASSERT_EQ(requests.size(), 3u + 4u) << "7 + 7 + 7 + 4";
  EXPECT_EQ(requests[3].target.find("continuation-token"), std::string::npos);
  for (size_t i = 4; i < requests.size(); ++i) {
    EXPECT_NE(requests[i].target.find("continuation-token="), std::string::npos) << requests[i].target;
  }
}

TEST_F(S3Store, MissingKeyIsASampleErrorNamingIt) {
  upload_training_set();
  auto source = open_s3_source(server_->options("s3://data/train/"));
  const SampleInfo missing{"train/gone.bin", 10, "etag"};
  std::vector<std::byte> out;
  for (int op = 0; op < 3; ++op) {
    try {
      if (op == 0) source->read(missing, out);
      if (op == 1) source->stat(missing);
      if (op == 2) source->open(missing);
      ADD_FAILURE() << "operation " << op << " found a missing key";
    } catch (const SampleError& e) {
      EXPECT_EQ(e.key(), "train/gone.bin");
      EXPECT_NE(std::string(e.what()).find("s3://data/train/gone.bin does not exist at " + server_->endpoint()),
                std::string::npos)
          << e.what();
    }
  }
}

TEST_F(S3Store, WrongBucketIsAClearUsageError) {
  auto source = open_s3_source(server_->options("s3://no-such-bucket/train"));
  try {
    source->list();
    FAIL() << "listed a bucket that does not exist";
  } catch (const SampleError&) {
    FAIL() << "a missing bucket is not a sample error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_EQ(std::string(e.what()), "bucket no-such-bucket does not exist at " + server_->endpoint());
    EXPECT_NE(e.hint().find("--s3-endpoint"), std::string::npos);
  }
}

TEST_F(S3Store, EmptyPrefixIsAUsageError) {
  upload_training_set();
  try {
    open_s3_source(server_->options("s3://data/nothing-here/"))->list();
    FAIL() << "an empty listing was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("no objects under s3://data/nothing-here/"), std::string::npos) << e.what();
  }
}

TEST_F(S3Store, UnknownAccessKeyIsACredentialsError) {
  upload_training_set();
  auto options = server_->options("s3://data/train/");
  options.env["AWS_ACCESS_KEY_ID"] = "UNKNOWNKEYID";
  auto source = open_s3_source(options);
  try {
    source->list();
    FAIL() << "s3rver accepted an unknown access key";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(what.find("403 InvalidAccessKeyId"), std::string::npos) << what;
    EXPECT_NE(what.find("credentials"), std::string::npos) << what;
    EXPECT_NE(e.hint().find("the environment (AWS_ACCESS_KEY_ID)"), std::string::npos) << e.hint();
    EXPECT_EQ(what.find("UNKNOWNKEYID"), std::string::npos) << what;
  }
  // HEAD has no body: the status alone still says "credentials".
  try {
    source->stat({"train/a.bin", 1000, ""});
    FAIL() << "HEAD with an unknown key succeeded";
  } catch (const SampleError&) {
    FAIL() << "403 is not a per-sample error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(403)"), std::string::npos) << e.what();
  }
}

TEST_F(S3Store, ManyThreadsReadAtOnce) {
  std::vector<std::pair<std::string, std::string>> uploads;
  for (int i = 0; i < 64; ++i) uploads.emplace_back(fmt::format("t/{:03d}", i), reproducible_bytes(10000 + i, i));
  server_->put_objects("data", uploads);
  auto options = server_->options("s3://data/t/");
  options.requests.max_connections = 4;
  auto source = open_s3_source(options);
  const auto samples = source->list();
  ASSERT_EQ(samples.size(), 64u);
  std::atomic<int> wrong{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 16; ++t) {
    workers.emplace_back([&, t] {
      std::vector<std::byte> out;
      for (int i = 0; i < 64; ++i) {
        const auto& s = samples[(i + t * 4) % 64];
        source->read(s, out);
        if (as_string(out) != uploads[(i + t * 4) % 64].second) ++wrong;
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(wrong, 0);
}

// Sockets of this process connected to `port` (client side), from /proc/net/tcp.
int client_sockets_to(int port) {
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  std::getline(tcp, line);
  int count = 0;
  while (std::getline(tcp, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote;
    fields >> slot >> local >> remote;
    if (std::stoi(remote.substr(remote.find(':') + 1), nullptr, 16) == port) ++count;
  }
  return count;
}

TEST_F(S3Store, ReusesConnections) {
  const auto objects = upload_training_set();
  const int before = client_sockets_to(server_->port());
  auto options = server_->options("s3://data/train/");
  options.requests.max_connections = 2;
  auto source = open_s3_source(options);
  const auto samples = source->list();
  std::vector<std::byte> out;
  for (int round = 0; round < 20; ++round) {
    for (const auto& s : samples) source->read(s, out);
  }
  // 121 requests; without reuse each would leave a socket behind (TIME_WAIT).
  const int used = client_sockets_to(server_->port()) - before;
  EXPECT_GE(used, 1);
  EXPECT_LE(used, 2) << "one connection per pooled handle at most";
}

}  // namespace
}  // namespace gpufeed::loader
