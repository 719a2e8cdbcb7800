#include "gpufeed/http/metrics_server.hpp"

#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "gpufeed/error.hpp"
#include "gpufeed/monitor/prometheus_text.hpp"

namespace gpufeed {

ListenAddress parse_listen_address(const std::string& text) {
  ListenAddress a;
  const auto colon = text.rfind(':');
  auto bad = [&] {
    return usage_error(fmt::format("--listen '{}' is not HOST:PORT", text), "e.g. --listen 127.0.0.1:9464, or :9464 for all interfaces");
  };
  if (colon == std::string::npos) throw bad();
  std::string host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) throw bad();
  a.port = std::stoi(port);
  if (a.port > 65535) throw bad();
  a.host = host.empty() ? "0.0.0.0" : host;
  return a;
}

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
  std::mutex mutex;
  std::string latest = "";
  std::string host;
  int port = 0;
};

MetricsServer::MetricsServer(const ListenAddress& address) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.host = address.host;
  im.server.Get("/metrics", [&im](const httplib::Request&, httplib::Response& res) {
    std::string body;
    {
      std::lock_guard<std::mutex> lock(im.mutex);
      body = im.latest;
    }
    res.set_content(body, std::string(prom::kContentType).c_str());
  });
  im.server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("gpufeed monitor: metrics at /metrics (Prometheus text format 0.0.4)\n", "text/plain; charset=utf-8");
  });
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which lets a
  // second monitor share a taken port silently and split the scrapes.
  im.server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  errno = 0;
  const bool bound = address.port == 0 ? (im.port = im.server.bind_to_any_port(address.host.c_str())) > 0
                                       : im.server.bind_to_port(address.host.c_str(), address.port);
  if (!bound) {
    const int err = errno;
    const std::string where = fmt::format("{}:{}", address.host, address.port);
    throw runtime_error(fmt::format("cannot listen on {}: {}", where, err == EADDRINUSE || err == 0 ? "the address is in use or not this host's"
                                                                                                  : std::strerror(err)),
                        "give another --listen HOST:PORT (another exporter may hold this port), or --no-listen");
  }
  if (address.port != 0) im.port = address.port;
  im.thread = std::thread([&im] { im.server.listen_after_bind(); });
}

MetricsServer::~MetricsServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void MetricsServer::publish(std::string exposition) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->latest = std::move(exposition);
}

int MetricsServer::port() const { return impl_->port; }

std::string MetricsServer::url() const {
  const bool v6 = impl_->host.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}/metrics", v6 ? "[" : "", impl_->host, v6 ? "]" : "", impl_->port);
}

}  // namespace gpufeed
