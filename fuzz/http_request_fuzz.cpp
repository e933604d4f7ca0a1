// fuzz-libs: keel_core
// fuzz-sources: src/server/http/transport.cpp src/server/http/message.cpp src/server/connection.cpp

// libFuzzer target: the bytes a client sends → keel's HTTP transport (Boost.Beast's request parser under
// keel's limits and checks, src/server/http/transport.cpp, compiled into the target with the fuzz flags),
// over a real loopback connection to one Transport running in this process. Each input is sent whole, then
// the client half-closes; the transport must answer only with well-formed responses (a status line "HTTP/1.1
// NNN ", for each complete request the handler's 200 and for everything else its 4xx/5xx) and close or wait,
// never crash, leak, hang past its deadlines or hand the handler a request whose body disagrees with its
// framing.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "server/http/transport.h"

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "http_request_fuzz: %s\n", what);
  std::abort();
}

using keel::server::http::Request;
using keel::server::http::Response;
using keel::server::http::Transport;
using keel::server::http::TransportOptions;

// Started once and never destroyed; stopped at exit (libFuzzer's processes end with exit(), and a fork job
// ends every minute).
Transport& transport() {
  static Transport* t = [] {
    TransportOptions o;
    o.port = 0;
    o.io_threads = 1;
    o.workers = 2;
    o.max_body_bytes = 4096;
    o.max_header_bytes = 2048;
    o.idle_timeout = std::chrono::milliseconds(200);
    o.head_timeout = std::chrono::milliseconds(200);
    o.body_timeout = std::chrono::milliseconds(200);
    o.write_timeout = std::chrono::milliseconds(500);
    o.linger = std::chrono::milliseconds(50);
    auto handler = [](const Request& req, Response& res) {
      // The body the transport assembled must agree with its own framing.
      std::string length = req.header("Content-Length");
      if (!length.empty() && req.header("Transfer-Encoding").empty() &&
          std::strtoull(length.c_str(), nullptr, 10) != req.body.size())
        fail("the handler got a body whose size disagrees with its Content-Length");
      res.set_content(std::to_string(req.body.size()), "text/plain");
    };
    auto errors = [](int status, const std::string& code, const std::string& message, std::string_view) {
      Response r;
      r.status = status;
      r.set_content(code + ": " + message, "text/plain");
      return r;
    };
    auto* p = new Transport(o, handler, errors);
    p->start();
    // Its threads are joined before exit() destroys the statics they use (the logger among them): this
    // handler, registered after those were built, runs before their destructors.
    std::atexit([] { transport().stop(); });
    return p;
  }();
  return *t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Transport& t = transport();
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(t.port()));
  // A signal (libFuzzer's timers) may interrupt any call below: EINTR is retried, never taken for an answer.
  // An interrupted connect goes on in the background: wait for it and read its outcome.
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    if (errno != EINTR) fail(std::strerror(errno));
    pollfd p{fd, POLLOUT, 0};
    while (::poll(&p, 1, 10000) < 0 && errno == EINTR) {
    }
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) fail(std::strerror(err));
  }
  // The transport's deadlines are 200 ms: no answer and no close within 10 s is a hang (the margin is for a
  // loaded machine running sanitizers).
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  size_t sent = 0;
  while (sent < size) {
    ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the transport refused early and closed: its answer is still readable
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string got;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) fail("no answer and no close within 10 s");
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  // Closed with a reset: a TIME_WAIT per input would use up loopback's ephemeral ports within a minute at
  // this rate (connect then fails with EADDRNOTAVAIL, which fork-mode jobs hit).
  linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  ::close(fd);
  // Whatever came back starts with a status line.
  if (!got.empty() && (got.size() < 13 || got.compare(0, 9, "HTTP/1.1 ") != 0 || got[12] != ' '))
    fail("a response that does not start with a status line");
  return 0;
}
