// The S3 store when the server misbehaves: 503 SlowDown and 500 answers are
// retried and succeed; persistent failures, resets, a hanging server and a
// killed server end in one clear error within a bounded time; 4xx answers
// map to the right error. Faults come from a proxy in front of s3rver, or
// from the proxy alone where no real object is needed.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include <fmt/format.h>

#include "gpufeed/s3/s3_source.hpp"
#include "support/fault_proxy.hpp"
#include "support/s3rver.hpp"

namespace gpufeed::loader {
namespace {

using testing::Fault;
using testing::FaultProxy;
using testing::HttpRequest;
using testing::s3_error_xml;
using testing::s3_test_options;
using testing::S3rver;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string as_string(const std::vector<std::byte>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// The gpufeed::Error `f` throws (fails the test when it throws nothing).
template <typename F>
Error error_from(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error was thrown";
  return runtime_error("none");
}

class S3Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = S3rver::unavailable_reason()) GTEST_SKIP() << *why;
    server_ = std::make_unique<S3rver>(std::vector<std::string>{"data"});
    server_->put_objects("data", {{"k/one", "first object"}, {"k/two", "second"}});
  }
  std::unique_ptr<S3rver> server_;
};

TEST_F(S3Faults, SlowDownIsRetriedAndSucceeds) {
  FaultProxy proxy(server_->port(), FaultProxy::fail_first(2, 503, "SlowDown", "Please reduce your request rate."));
  auto source = open_s3_source(s3_test_options("s3://data/k/", proxy.endpoint()));
  std::vector<std::byte> out;
  source->read({"k/one", 12, ""}, out);
  EXPECT_EQ(as_string(out), "first object");
  EXPECT_EQ(proxy.requests().size(), 3u) << "two 503s, then the real answer";
}

TEST_F(S3Faults, InternalErrorsAreRetriedForEveryOperation) {
  FaultProxy proxy(server_->port(), FaultProxy::fail_first(3, 500, "InternalError", "We encountered an error."));
  auto source = open_s3_source(s3_test_options("s3://data/k/", proxy.endpoint()));
  EXPECT_EQ(source->list().size(), 2u);
  EXPECT_EQ(proxy.requests().size(), 4u);
  source->stat({"k/two", 6, ""});
  source->open({"k/two", 6, ""});
}

TEST_F(S3Faults, ConnectionResetsAreRetried) {
  FaultProxy proxy(server_->port(),
                   [](const HttpRequest&, int index) { return index < 2 ? Fault::reset() : Fault::forward(); });
  auto source = open_s3_source(s3_test_options("s3://data/k/", proxy.endpoint()));
  std::vector<std::byte> out;
  source->read({"k/two", 6, ""}, out);
  EXPECT_EQ(as_string(out), "second");
  EXPECT_EQ(proxy.requests().size(), 3u);
}

TEST_F(S3Faults, PersistentFailureGivesUpAfterMaxAttempts) {
  FaultProxy proxy(server_->port(), FaultProxy::fail_first(1000, 503, "SlowDown", "Please reduce your request rate."));
  auto options = s3_test_options("s3://data/k/", proxy.endpoint());
  options.requests.max_attempts = 3;
  auto source = open_s3_source(options);
  std::vector<std::byte> out;
  const auto e = error_from([&] { source->read({"k/one", 12, ""}, out); });
  EXPECT_EQ(e.kind(), ErrorKind::Runtime);
  EXPECT_EQ(std::string(e.what()),
            fmt::format("S3 GET s3://data/k/one failed after 3 attempts: HTTP 503 SlowDown: Please reduce your "
                        "request rate. ({})",
                        proxy.endpoint()));
  EXPECT_EQ(proxy.requests().size(), 3u);
}

TEST_F(S3Faults, KilledServerEndsInAClearErrorNotAHang) {
  auto options = server_->options("s3://data/k/");
  options.requests.retry_base = std::chrono::milliseconds(50);
  options.requests.retry_cap = std::chrono::milliseconds(400);
  auto source = open_s3_source(options);
  const auto samples = source->list();
  ASSERT_EQ(samples.size(), 2u);

  // Readers running while the server dies: each either reads or stops with
  // the error; none may hang.
  std::atomic<bool> failed_clearly{false};
  std::vector<std::future<void>> readers;
  for (int t = 0; t < 4; ++t) {
    readers.push_back(std::async(std::launch::async, [&] {
      std::vector<std::byte> out;
      for (int i = 0; i < 100000; ++i) {
        try {
          source->read(samples[i % 2], out);
        } catch (const Error& e) {
          const std::string what = e.what();
          if (what.find("failed after 5 attempts") != std::string::npos) failed_clearly = true;
          return;
        }
      }
    }));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto killed = Clock::now();
  server_->kill();
  for (auto& r : readers) {
    ASSERT_EQ(r.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "a reader hangs";
  }
  EXPECT_TRUE(failed_clearly);
  EXPECT_LT(seconds_since(killed), 30.0);

  // And a fresh request after the death: refused, retried, reported.
  const auto start = Clock::now();
  std::vector<std::byte> out;
  const auto e = error_from([&] { source->read(samples[0], out); });
  EXPECT_EQ(std::string(e.what()),
            "S3 GET s3://data/k/one failed after 5 attempts: connection refused (" + server_->endpoint() + ")");
  EXPECT_EQ(e.kind(), ErrorKind::Runtime);
  EXPECT_FALSE(e.hint().empty());
  // Four waits of at most 50, 100, 200, 400 ms.
  EXPECT_LT(seconds_since(start), 10.0);
}

// Faults that need no real server behind the proxy.
TEST(S3FaultsNoServer, HangingServerTimesOut) {
  FaultProxy proxy(0, [](const HttpRequest&, int) { return Fault::hang(); });
  auto options = s3_test_options("s3://data/k/", proxy.endpoint());
  options.requests.request_timeout = std::chrono::milliseconds(1000);
  options.requests.max_attempts = 2;
  auto source = open_s3_source(options);
  const auto start = Clock::now();
  const auto e = error_from([&] { source->stat({"k/one", 1, ""}); });
  EXPECT_EQ(std::string(e.what()),
            fmt::format("S3 HEAD s3://data/k/one failed after 2 attempts: no data for 1000 ms (request timeout) ({})",
                        proxy.endpoint()));
  EXPECT_EQ(proxy.requests().size(), 2u);
  EXPECT_LT(seconds_since(start), 15.0);  // 2 x ~1-2 s (libcurl checks once a second)
}

TEST(S3FaultsNoServer, UnansweredConnectTimesOut) {
  // A listener that never accepts, its queue filled: further SYNs are
  // dropped, so a connect neither succeeds nor is refused.
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), size), 0);
  ASSERT_EQ(listen(listener, 0), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size), 0);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    fillers.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto options = s3_test_options("s3://data/k/", "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)));
  options.requests.connect_timeout = std::chrono::milliseconds(300);
  options.requests.max_attempts = 2;
  const auto start = Clock::now();
  const auto e = error_from([&] { open_s3_source(options)->list(); });
  EXPECT_NE(std::string(e.what()).find("failed after 2 attempts: no connection within 300 ms"), std::string::npos)
      << e.what();
  EXPECT_LT(seconds_since(start), 5.0);
  for (int fd : fillers) close(fd);
  close(listener);
}

TEST(S3FaultsNoServer, NothingListeningIsConnectionRefused) {
  const int port = testing::closed_loopback_port();
  auto options = s3_test_options("s3://data/k/", "http://127.0.0.1:" + std::to_string(port));
  options.requests.max_attempts = 2;
  const auto e = error_from([&] { open_s3_source(options)->list(); });
  EXPECT_EQ(
      std::string(e.what()),
      fmt::format("S3 LIST s3://data/k/ failed after 2 attempts: connection refused (http://127.0.0.1:{})", port));
}

TEST(S3FaultsNoServer, ForbiddenIsACredentialsOrPermissionsError) {
  FaultProxy proxy(
      0, [](const HttpRequest&, int) { return Fault::respond(403, s3_error_xml("AccessDenied", "Access Denied")); });
  auto source = open_s3_source(s3_test_options("s3://data/k/", proxy.endpoint()));
  std::vector<std::byte> out;
  // Fatal, not a per-sample error: every other object would be refused too.
  try {
    source->read({"k/one", 1, ""}, out);
  } catch (const SampleError&) {
    ADD_FAILURE() << "403 became a SampleError";
  } catch (const Error&) {
  }
  const auto e = error_from([&] { source->read({"k/one", 1, ""}, out); });
  EXPECT_EQ(e.kind(), ErrorKind::Usage);
  EXPECT_EQ(std::string(e.what()), fmt::format("S3 refused GET s3://data/k/one at {} (403 AccessDenied: Access "
                                               "Denied): the credentials are wrong or may not read this",
                                               proxy.endpoint()));
  EXPECT_NE(e.hint().find("s3:GetObject"), std::string::npos) << e.hint();
  EXPECT_EQ(proxy.requests().size(), 2u) << "403 is not retried";
}

TEST(S3FaultsNoServer, OtherClientErrorsCarryS3sCodeAndMessage) {
  FaultProxy proxy(0, [](const HttpRequest&, int) {
    return Fault::respond(400, s3_error_xml("InvalidArgument", "Invalid Argument: max-keys"));
  });
  auto source = open_s3_source(s3_test_options("s3://data/k/", proxy.endpoint()));
  auto e = error_from([&] { source->list(); });
  EXPECT_EQ(e.kind(), ErrorKind::Runtime);
  EXPECT_EQ(std::string(e.what()),
            "S3 LIST s3://data/k/ failed at " + proxy.endpoint() + ": 400 InvalidArgument: Invalid Argument: max-keys");
  try {
    std::vector<std::byte> out;
    source->read({"k/one", 1, ""}, out);
    FAIL() << "no error";
  } catch (const SampleError& sample) {
    EXPECT_EQ(sample.key(), "k/one");
    EXPECT_NE(std::string(sample.what()).find("400 InvalidArgument: Invalid Argument: max-keys"), std::string::npos);
  }
  EXPECT_EQ(proxy.requests().size(), 2u) << "4xx is not retried";
}

TEST(S3FaultsNoServer, WrongRegionNamesTheRightOne) {
  FaultProxy proxy(0, [](const HttpRequest&, int) {
    return Fault::respond(400,
                          "<Error><Code>AuthorizationHeaderMalformed</Code><Message>the region 'us-east-1' is "
                          "wrong; expecting 'eu-west-1'</Message><Region>eu-west-1</Region></Error>");
  });
  const auto e = error_from([&] { open_s3_source(s3_test_options("s3://data/k/", proxy.endpoint()))->list(); });
  EXPECT_EQ(e.kind(), ErrorKind::Usage);
  EXPECT_EQ(std::string(e.what()), "bucket data is in region eu-west-1, not us-east-1");
  EXPECT_EQ(e.hint(), "pass --s3-region eu-west-1 (or set AWS_REGION=eu-west-1)");
}

TEST(S3FaultsNoServer, UnreadableOrEndlessListingsAreErrorsNotLoops) {
  FaultProxy garbage(0, [](const HttpRequest&, int) { return Fault::respond(200, "<html>hello</html>"); });
  auto e = error_from([&] { open_s3_source(s3_test_options("s3://data/k/", garbage.endpoint()))->list(); });
  EXPECT_NE(std::string(e.what()).find("returned a listing gpufeed cannot read"), std::string::npos) << e.what();

  FaultProxy endless(0, [](const HttpRequest&, int) {
    return Fault::respond(200,
                          "<ListBucketResult><IsTruncated>true</IsTruncated><Contents><Key>k/a</Key><Size>1"
                          "</Size></Contents><NextContinuationToken>same</NextContinuationToken>"
                          "</ListBucketResult>");
  });
  e = error_from([&] { open_s3_source(s3_test_options("s3://data/k/", endless.endpoint()))->list(); });
  EXPECT_NE(std::string(e.what()).find("gives no new continuation token"), std::string::npos) << e.what();
  EXPECT_EQ(endless.requests().size(), 2u);
}

TEST(S3FaultsNoServer, ConcurrencyIsBoundedByMaxConnections) {
  FaultProxy proxy(
      0, [](const HttpRequest&, int) { return Fault::respond(200, "payload", std::chrono::milliseconds(20)); });
  auto options = s3_test_options("s3://data/k/", proxy.endpoint());
  options.requests.max_connections = 3;
  auto source = open_s3_source(options);
  std::vector<std::thread> workers;
  for (int t = 0; t < 12; ++t) {
    workers.emplace_back([&] {
      std::vector<std::byte> out;
      for (int i = 0; i < 5; ++i) source->read({"k/one", 7, ""}, out);
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(proxy.requests().size(), 60u);
  EXPECT_LE(proxy.max_concurrent(), 3);
  EXPECT_GE(proxy.max_concurrent(), 2) << "requests did run in parallel";
}

}  // namespace
}  // namespace gpufeed::loader
