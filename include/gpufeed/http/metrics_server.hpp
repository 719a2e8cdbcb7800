#pragma once
// Adapter: the HTTP endpoint a Prometheus server scrapes (cpp-httplib).
// GET /metrics returns the latest exposition handed to publish(); GET /
// says what is served. The server runs on its own thread from construction
// to destruction; a scrape never waits for the monitor's loop.
#include <memory>
#include <string>

namespace gpufeed {

struct ListenAddress {
  std::string host = "127.0.0.1";
  int port = 9464;
};

// "HOST:PORT", ":PORT" (all interfaces) or "[V6]:PORT"; throws a usage
// error naming `text` when it is none of these.
ListenAddress parse_listen_address(const std::string& text);

class MetricsServer {
 public:
  // Binds now: a taken port or an address that is not this host's throws
  // gpufeed::Error (runtime, exit 1) naming the address.
  explicit MetricsServer(const ListenAddress& address);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  void publish(std::string exposition);
  int port() const;  // the bound port (an ephemeral one for port 0)
  std::string url() const;  // http://HOST:PORT/metrics

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpufeed
