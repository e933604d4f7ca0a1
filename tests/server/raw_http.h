// A minimal HTTP/1.1 client on a plain socket, written for the tests: it shares no code with the server,
// reads a response incrementally (chunked or with a length), times what it sees, can send any bytes
// (malformed heads on purpose) and can hang up or half-close at any moment. HttpClient (below) is the plain
// request/response client the tests use where nothing unusual is sent.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace keel::testing {

class RawHttp {
 public:
  explicit RawHttp(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0)
      throw std::runtime_error("connect failed");
  }
  ~RawHttp() { close(); }
  RawHttp(const RawHttp&) = delete;
  RawHttp& operator=(const RawHttp&) = delete;

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // shutdown(SHUT_WR): the request is sent, nothing more will be; the response can still be read.
  void half_close() { ::shutdown(fd_, SHUT_WR); }

  // Sends `bytes` as they are; false when the connection is gone.
  bool send_raw(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  int fd() const { return fd_; }

  void send(const std::string& method, const std::string& path, const std::string& body = "",
            const std::vector<std::string>& headers = {}) {
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (const auto& h : headers) req += h + "\r\n";
    if (!body.empty() || method == "POST")
      req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    req += "\r\n" + body;
    size_t sent = 0;
    while (sent < req.size()) {
      ssize_t n = ::send(fd_, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed");
      sent += static_cast<size_t>(n);
    }
  }

  // Reads the status line and headers (keys lower-cased); false on timeout or a closed connection.
  bool read_headers(int timeout_ms = 30000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    done_ = false;  // a keep-alive connection's next response
    headers.clear();
    while (raw_.find("\r\n\r\n") == std::string::npos) {
      if (!fill(deadline)) return false;
    }
    size_t end = raw_.find("\r\n\r\n");
    std::string head = raw_.substr(0, end);
    raw_.erase(0, end + 4);
    size_t line_end = head.find("\r\n");
    std::string status_line = head.substr(0, line_end);
    status = std::stoi(status_line.substr(status_line.find(' ') + 1, 3));
    size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      size_t e = head.find("\r\n", pos);
      if (e == std::string::npos) e = head.size();
      std::string line = head.substr(pos, e - pos);
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string key = line.substr(0, colon);
        std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
        std::string value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        headers[key] = value;
      }
      pos = e + 2;
    }
    chunked_ = headers.count("transfer-encoding") && headers["transfer-encoding"] == "chunked";
    remaining_ = headers.count("content-length") ? std::stoll(headers["content-length"]) : -1;
    if (remaining_ == 0) done_ = true;
    return true;
  }

  // Appends body bytes that arrive before the deadline to `body`; false once the body has ended (or the
  // connection closed), true when it may continue.
  bool read_body_some(int timeout_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      if (done_) return false;
      if (decode()) return !done_;
      if (!fill(deadline)) return !closed_ && !done_;
    }
  }

  // The whole rest of the body.
  std::string read_body(int timeout_ms = 60000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!done_ && std::chrono::steady_clock::now() < deadline) {
      if (!read_body_some(100) && (done_ || closed_)) break;
    }
    return body;
  }

  // Waits until the server closes the connection (EOF or reset), discarding what arrives; false on timeout.
  bool wait_closed(int timeout_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!closed_) {
      if (!fill(deadline) && !closed_) return false;
      raw_.clear();
    }
    return true;
  }

  bool body_done() const { return done_; }
  bool connection_closed() const { return closed_; }

  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;

 private:
  // Reads what the socket has; false on timeout or close.
  bool fill(std::chrono::steady_clock::time_point deadline) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[16384];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) {
      closed_ = true;
      if (!chunked_ && remaining_ < 0) done_ = true;  // a body delimited by the close
      return false;
    }
    raw_.append(buf, static_cast<size_t>(n));
    return true;
  }

  // Moves decoded body bytes from raw_ to body; true when it made progress.
  bool decode() {
    if (!chunked_) {
      if (raw_.empty()) return false;
      size_t take =
          remaining_ < 0 ? raw_.size() : std::min<size_t>(raw_.size(), static_cast<size_t>(remaining_));
      body += raw_.substr(0, take);
      raw_.erase(0, take);
      if (remaining_ >= 0) {
        remaining_ -= static_cast<int64_t>(take);
        if (remaining_ == 0) done_ = true;
      }
      return take > 0 || done_;
    }
    bool progress = false;
    for (;;) {
      size_t e = raw_.find("\r\n");
      if (e == std::string::npos) return progress;
      size_t size = std::stoul(raw_.substr(0, e), nullptr, 16);
      if (raw_.size() < e + 2 + size + 2) return progress;
      body += raw_.substr(e + 2, size);
      raw_.erase(0, e + 2 + size + 2);
      progress = true;
      if (size == 0) {
        done_ = true;
        return true;
      }
    }
  }

  int fd_ = -1;
  std::string raw_;
  bool chunked_ = false, done_ = false, closed_ = false;
  int64_t remaining_ = -1;
};

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // keys lower-cased
  std::string body;
  bool has_header(std::string key) const {
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
    return headers.count(key) > 0;
  }
  std::string get_header_value(std::string key) const {
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
    auto it = headers.find(key);
    return it == headers.end() ? std::string() : it->second;
  }
};

// One request per connection (Connection: close), the whole response; nullopt when there is none (refused,
// closed early, or the read timeout passed).
class HttpClient {
 public:
  HttpClient(std::string host, int port) : port_(port) { (void)host; }  // loopback only
  void set_read_timeout(int seconds) { read_timeout_ms_ = seconds * 1000; }
  void set_connection_timeout(int) {}  // loopback connects at once or is refused

  std::optional<HttpReply> Get(const std::string& path, const Headers& headers = {}) {
    return request("GET", path, headers, nullptr, "");
  }
  std::optional<HttpReply> Post(const std::string& path, const std::string& body,
                                const std::string& content_type) {
    return request("POST", path, {}, &body, content_type);
  }
  std::optional<HttpReply> Post(const std::string& path, const Headers& headers, const std::string& body,
                                const std::string& content_type) {
    return request("POST", path, headers, &body, content_type);
  }

 private:
  std::optional<HttpReply> request(const std::string& method, const std::string& path, const Headers& headers,
                                   const std::string* body, const std::string& content_type) {
    try {
      RawHttp c(port_);
      std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
      for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
      if (body) {
        req += "Content-Type: " + content_type + "\r\n";
        req += "Content-Length: " + std::to_string(body->size()) + "\r\n";
      }
      req += "\r\n";
      if (body) req += *body;
      if (!c.send_raw(req)) return std::nullopt;
      if (!c.read_headers(read_timeout_ms_)) return std::nullopt;
      HttpReply r;
      r.status = c.status;
      r.headers = c.headers;
      r.body = c.read_body(read_timeout_ms_);
      if (!c.body_done()) return std::nullopt;
      return r;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  int port_;
  int read_timeout_ms_ = 120000;
};

// The `data:` payloads of an SSE body, in order; comments (": ...") are skipped.
inline std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t e = body.find("\n\n", pos);
    if (e == std::string::npos) break;
    std::string event = body.substr(pos, e - pos);
    if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
    pos = e + 2;
  }
  return out;
}

}  // namespace keel::testing
