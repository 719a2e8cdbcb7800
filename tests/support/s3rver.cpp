#include "support/s3rver.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <thread>

#include "s3_client.hpp"

extern char** environ;

namespace gpufeed::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::filesystem::path s3rver_script() {
  return std::filesystem::path(GPUFEED_SOURCE_DIR) / "tests/fixtures/s3rver/node_modules/s3rver/bin/s3rver.js";
}

// `node` on PATH, resolved here: the child may only exec, not search.
std::optional<std::filesystem::path> find_node() {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const auto end = dirs.find(':', start);
    const auto dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty()) {
      const auto candidate = std::filesystem::path(dir) / "node";
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> S3rver::unavailable_reason() {
  if (!find_node()) return "node is not on PATH (s3rver needs Node.js; scripts/setup.sh installs it)";
  if (!std::filesystem::exists(s3rver_script())) {
    return "s3rver is not installed (" + s3rver_script().string() +
           " is missing); install it with scripts/install-s3rver.sh";
  }
  return std::nullopt;
}

S3rver::S3rver(const std::vector<std::string>& buckets) {
  const auto node = find_node();
  if (!node) throw std::runtime_error("node is not on PATH");
  std::vector<std::string> args = {
      node->string(), s3rver_script().string(), "-d", (data_ / "data").string(), "-a", "127.0.0.1", "-p", "0",
      "--silent"};
  for (const auto& bucket : buckets) {
    args.push_back("--configure-bucket");
    args.push_back(bucket);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // Its continuation tokens use a cipher OpenSSL 3 keeps in the legacy
  // provider: without it, every paged listing fails.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "NODE_OPTIONS=", 13) != 0) env_strings.emplace_back(*e);
  }
  env_strings.emplace_back("NODE_OPTIONS=--openssl-legacy-provider");
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  output_fd_ = memfd_create("s3rver-output", MFD_CLOEXEC);
  if (output_fd_ < 0) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    // Only async-signal-safe calls here: the test process may have threads.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(output_fd_, STDOUT_FILENO);
    dup2(output_fd_, STDERR_FILENO);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }

  const std::regex listening(R"(S3rver listening on 127\.0\.0\.1:(\d+))");
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (port_ == 0) {
    std::smatch match;
    const auto text = output();
    if (std::regex_search(text, match, listening)) {
      port_ = std::stoi(match[1]);
      break;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("s3rver exited before listening: " + output());
    }
    if (Clock::now() > deadline) {
      stop();
      throw std::runtime_error("s3rver did not listen within 20 s: " + text);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

S3rver::~S3rver() {
  stop();
  if (output_fd_ >= 0) close(output_fd_);
}

void S3rver::kill() { stop(); }

void S3rver::stop() noexcept {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

std::string S3rver::output() const {
  std::string text;
  char buf[4096];
  off_t offset = 0;
  for (;;) {
    const ssize_t n = pread(output_fd_, buf, sizeof buf, offset);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    offset += n;
  }
  return text;
}

loader::S3Options s3_test_options(const std::string& url, const std::string& endpoint) {
  loader::S3Options options;
  options.url = url;
  options.endpoint = endpoint;
  options.env = {{"AWS_ACCESS_KEY_ID", "S3RVER"}, {"AWS_SECRET_ACCESS_KEY", "S3RVER"}};
  options.requests.max_connections = 8;
  options.requests.connect_timeout = std::chrono::milliseconds(2000);
  options.requests.request_timeout = std::chrono::milliseconds(5000);
  options.requests.retry_base = std::chrono::milliseconds(20);
  options.requests.retry_cap = std::chrono::milliseconds(200);
  options.retry_seed = 1;
  return options;
}

loader::S3Options S3rver::options(const std::string& url) const { return s3_test_options(url, endpoint()); }

void S3rver::put_objects(const std::string& bucket,
                         const std::vector<std::pair<std::string, std::string>>& objects) const {
  loader::s3::S3Client client(loader::s3::resolve_config(options("s3://" + bucket)));
  std::atomic<size_t> next{0};
  std::vector<std::thread> uploaders;
  std::mutex mutex;
  std::string failure;
  for (int t = 0; t < 8; ++t) {
    uploaders.emplace_back([&] {
      std::vector<std::byte> body;
      for (size_t i = next++; i < objects.size(); i = next++) {
        loader::s3::Request request;
        request.method = "PUT";
        request.key = objects[i].first;
        request.upload = objects[i].second;
        request.what = "PUT s3://" + bucket + "/" + objects[i].first;
        try {
          const auto response = client.perform(request, body);
          if (response.status != 200) {
            throw std::runtime_error(request.what + ": HTTP " + std::to_string(response.status));
          }
        } catch (const std::exception& e) {
          std::lock_guard lock(mutex);
          failure = e.what();
          return;
        }
      }
    });
  }
  for (auto& t : uploaders) t.join();
  if (!failure.empty()) throw std::runtime_error("upload to s3rver failed: " + failure);
}

}  // namespace gpufeed::testing
