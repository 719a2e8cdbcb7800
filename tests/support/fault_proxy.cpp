#include "support/fault_proxy.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>

namespace gpufeed::testing {
namespace {

constexpr int kPollMs = 50;

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// Waits until `fd` is readable; false when stopping or on error.
bool wait_readable(int fd, const std::atomic<bool>& stopping) {
  while (!stopping) {
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, kPollMs);
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
  }
  return false;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 206:
      return "Partial Content";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

// Reads one request head and its Content-Length body; nullopt when the peer
// closed, the proxy is stopping, or the head is malformed.
std::optional<std::pair<HttpRequest, std::string>> read_request(int fd, const std::atomic<bool>& stopping) {
  std::string data;
  size_t head_end = std::string::npos;
  char buf[8192];
  while ((head_end = data.find("\r\n\r\n")) == std::string::npos) {
    if (data.size() > (1 << 20) || !wait_readable(fd, stopping)) return std::nullopt;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return std::nullopt;
    data.append(buf, static_cast<size_t>(n));
  }
  HttpRequest request;
  const std::string head = data.substr(0, head_end + 2);
  size_t line_start = 0;
  bool first = true;
  while (line_start < head.size()) {
    const auto line_end = head.find("\r\n", line_start);
    const auto line = head.substr(line_start, line_end - line_start);
    line_start = line_end + 2;
    if (first) {
      const auto s1 = line.find(' ');
      const auto s2 = line.find(' ', s1 + 1);
      if (s1 == std::string::npos || s2 == std::string::npos) return std::nullopt;
      request.method = line.substr(0, s1);
      request.target = line.substr(s1 + 1, s2 - s1 - 1);
      first = false;
      continue;
    }
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    request.headers.emplace_back(line.substr(0, colon), value);
  }
  size_t length = 0;
  if (auto text = request.header("content-length"); !text.empty()) length = std::stoul(text);
  request.body = data.substr(head_end + 4);
  while (request.body.size() < length) {
    if (!wait_readable(fd, stopping)) return std::nullopt;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return std::nullopt;
    request.body.append(buf, static_cast<size_t>(n));
  }
  return std::make_pair(std::move(request), head);
}

int listen_on_loopback(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), size) != 0 || listen(fd, 128) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    const int err = errno;
    close(fd);
    throw std::runtime_error(std::string("fault proxy cannot listen: ") + std::strerror(err));
  }
  *port = ntohs(address.sin_port);
  return fd;
}

int connect_loopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void respond(int fd, const HttpRequest& request, int status, const std::string& body) {
  std::string response = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) +
                         "\r\nContent-Type: application/xml\r\nContent-Length: " + std::to_string(body.size()) +
                         "\r\nConnection: close\r\n\r\n";
  if (request.method != "HEAD") response += body;
  write_all(fd, response);
}

}  // namespace

std::string HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (same_name(key, name)) return value;
  }
  return {};
}

std::string s3_error_xml(std::string_view code, std::string_view message) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + std::string(code) + "</Code><Message>" +
         std::string(message) + "</Message><RequestId>fault-proxy</RequestId></Error>";
}

int closed_loopback_port() {
  int port = 0;
  close(listen_on_loopback(&port));
  return port;
}

FaultProxy::FaultProxy(int upstream_port, Rule rule) : upstream_port_(upstream_port), rule_(std::move(rule)) {
  listener_ = listen_on_loopback(&port_);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FaultProxy::~FaultProxy() {
  stopping_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& worker : workers_) worker.join();
  close(listener_);
}

FaultProxy::Rule FaultProxy::fail_first(int count, int status, std::string code, std::string message) {
  return [=](const HttpRequest&, int index) {
    return index < count ? Fault::respond(status, s3_error_xml(code, message)) : Fault::forward();
  };
}

std::vector<HttpRequest> FaultProxy::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

void FaultProxy::accept_loop() {
  while (wait_readable(listener_, stopping_)) {
    const int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    workers_.emplace_back([this, client] {
      serve(client);
      close(client);
    });
  }
}

void FaultProxy::serve(int client) {
  auto received = read_request(client, stopping_);
  if (!received) return;
  auto& [request, head] = *received;
  const int active = ++active_;
  for (int seen = max_active_; active > seen && !max_active_.compare_exchange_weak(seen, active);) {
  }
  int index = 0;
  {
    std::lock_guard lock(mutex_);
    index = static_cast<int>(requests_.size());
    requests_.push_back(request);
  }
  const Fault fault = rule_(request, index);
  std::this_thread::sleep_for(fault.delay);
  --active_;
  switch (fault.kind) {
    case Fault::Kind::Respond:
      respond(client, request, fault.status, fault.body);
      break;
    case Fault::Kind::Reset: {
      linger hard{1, 0};  // close() sends RST instead of FIN
      setsockopt(client, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
      break;
    }
    case Fault::Kind::Hang: {
      char buf[256];
      // Until the client gives up (closes) or the proxy stops.
      while (wait_readable(client, stopping_) && recv(client, buf, sizeof buf, 0) > 0) {
      }
      break;
    }
    case Fault::Kind::Forward:
      forward(client, request, head);
      break;
  }
}

void FaultProxy::forward(int client, const HttpRequest& request, const std::string& raw_head) {
  const int upstream = upstream_port_ > 0 ? connect_loopback(upstream_port_) : -1;
  if (upstream < 0) {
    respond(client, request, 502, "");
    return;
  }
  // The head as received, with "Connection: close" so the server ends the
  // response by closing: no response parsing needed.
  std::string head;
  size_t start = 0;
  while (start < raw_head.size()) {
    const auto end = raw_head.find("\r\n", start);
    const auto line = raw_head.substr(start, end + 2 - start);
    start = end + 2;
    if (line.size() >= 11 && same_name(line.substr(0, 11), "connection:")) continue;
    head += line;
  }
  head += "Connection: close\r\n\r\n";
  if (write_all(upstream, head) && write_all(upstream, request.body)) {
    char buf[65536];
    while (wait_readable(upstream, stopping_)) {
      const ssize_t n = recv(upstream, buf, sizeof buf, 0);
      if (n <= 0 || !write_all(client, std::string_view(buf, static_cast<size_t>(n)))) break;
    }
  }
  close(upstream);
}

}  // namespace gpufeed::testing
