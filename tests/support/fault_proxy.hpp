#pragma once
// A small HTTP/1.1 proxy for the S3 tests, on 127.0.0.1 with a free port.
// It records every request (method, target, headers) and asks a rule what to
// do with it: forward it to the server behind (s3rver), answer it itself
// (503 SlowDown, 500, a canned listing), reset the connection, or hang
// without answering. Each response closes its connection, so every request
// arrives on a fresh one and the proxy never has to parse a response.
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace gpufeed::testing {

struct HttpRequest {
  std::string method;
  // Path and query, exactly as sent.
  std::string target;
  // As sent, in order.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The first header called `name` (any case), or "".
  std::string header(std::string_view name) const;
};

struct Fault {
  enum class Kind { Forward, Respond, Reset, Hang };
  Kind kind = Kind::Forward;
  int status = 0;
  std::string body;
  std::chrono::milliseconds delay{0};  // waited before acting (a slow server)

  static Fault forward() { return {}; }
  static Fault respond(int status, std::string body, std::chrono::milliseconds delay = {}) {
    return {Kind::Respond, status, std::move(body), delay};
  }
  static Fault reset() { return {Kind::Reset, 0, {}, {}}; }
  static Fault hang() { return {Kind::Hang, 0, {}, {}}; }
};

// <Error><Code>code</Code><Message>message</Message></Error>
std::string s3_error_xml(std::string_view code, std::string_view message);

// A port on 127.0.0.1 that was free a moment ago and has nothing listening:
// connecting to it is refused.
int closed_loopback_port();

class FaultProxy {
 public:
  // index: 0 for the first request the proxy sees, then 1, 2, ...
  using Rule = std::function<Fault(const HttpRequest& request, int index)>;

  // Forwards to 127.0.0.1:upstream_port; with 0 there is nothing behind it
  // and a forwarded request is answered 502.
  FaultProxy(int upstream_port, Rule rule);
  // Stops listening, wakes hanging connections and joins every thread.
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // Answers the first `count` requests with `status` and an S3 error body,
  // forwards the rest.
  static Rule fail_first(int count, int status, std::string code, std::string message);

  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<HttpRequest> requests() const;
  // The most requests it held at one time between receiving one and
  // starting to answer it (what a client's concurrency limit bounds).
  int max_concurrent() const { return max_active_; }

 private:
  void accept_loop();
  void serve(int client);
  void forward(int client, const HttpRequest& request, const std::string& raw_head);

  int upstream_port_;
  Rule rule_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> active_{0};
  std::atomic<int> max_active_{0};
  mutable std::mutex mutex_;
  std::vector<HttpRequest> requests_;
  std::vector<std::thread> workers_;
  std::thread acceptor_;
};

}  // namespace gpufeed::testing
