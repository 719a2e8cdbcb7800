#pragma once
// s3rver (npm s3rver@3, installed by scripts/install-s3rver.sh into
// tests/fixtures/s3rver/node_modules) as a child process of one test: on
// 127.0.0.1 with a port the kernel picks, over a fresh temp directory, with
// the given buckets. Stopped and reaped on destruction; it also gets SIGKILL
// if the test process dies, so no server outlives its test.
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpufeed/s3/s3_source.hpp"
#include "support/temp_dir.hpp"

namespace gpufeed::testing {

class S3rver {
 public:
  // Why s3rver cannot run here (no node, not installed), with the command
  // that installs it; nullopt when it can. Tests: GTEST_SKIP() << *why.
  static std::optional<std::string> unavailable_reason();

  // Starts it and waits (at most 20 s) until it listens; throws
  // std::runtime_error with its output otherwise.
  explicit S3rver(const std::vector<std::string>& buckets);
  ~S3rver();
  S3rver(const S3rver&) = delete;
  S3rver& operator=(const S3rver&) = delete;

  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // SIGKILL now and reap: the server dies mid-run.
  void kill();
  // What it printed so far.
  std::string output() const;

  // Store options for `url` on this server: the access key s3rver knows
  // (S3RVER; it checks the key id but not SigV4 signatures), quick retries.
  loader::S3Options options(const std::string& url) const;

  // Uploads key -> bytes into `bucket` with the store's own client (its PUT
  // exists for this alone), eight requests at a time.
  void put_objects(const std::string& bucket, const std::vector<std::pair<std::string, std::string>>& objects) const;

 private:
  void stop() noexcept;

  TempDir data_;
  pid_t pid_ = -1;
  int port_ = 0;
  int output_fd_ = -1;
};


// Options for a store at `endpoint` with fixed credentials and quick retries
// (base 20 ms, cap 200 ms), for tests that talk to a FaultProxy.
loader::S3Options s3_test_options(const std::string& url, const std::string& endpoint);

}  // namespace gpufeed::testing
