// The HTTP/1.1 transport: Boost.Asio sockets and Boost.Beast's request parser, event-driven. A few io threads
// own every connection: they accept, read each request's head and body under limits and per-phase deadlines,
// refuse what is malformed with its 4xx at once (then close), and write responses. Only a complete request
// reaches a request worker (a bounded pool), so an idle keep-alive connection, a slow head or a partial body
// costs a socket and a timer, never a worker. The handler sees keel's own Request / Response (message.h).
//
// Choices (RFC 9112, and what nginx does):
//   - head: at most max_header_bytes (request line and headers) -> 431; the whole head must arrive within
//     head_timeout of its first byte (a slowloris head is cut) -> 408 and close.
//   - malformed head (a line without a colon, a bad request line, bad line endings), Content-Length that is
//     not a decimal number (negative, >= 2^64) or two that differ, Content-Length together with
//     Transfer-Encoding, a bad chunk (a negative or non-hex size) -> 400 and close (RFC 9112 6.3, 7.1).
//   - Transfer-Encoding other than exactly "chunked" -> 501 and close (RFC 9112 6.1; nginx answers 501).
//   - POST, PUT or PATCH with neither Content-Length nor chunked -> 411 (every POST here carries a body;
//     RFC 9110 15.5.12; nginx answers 411 where it needs a length).
//   - a Content-Length over max_body_bytes -> 413 before any body byte is read; a chunked body that outgrows
//     it -> 413 at that chunk. A body that stalls for body_timeout -> 408 and close.
//   - Expect: 100-continue gets its 100 once the head passed these checks.
//   - a connection closed after an error response first drains what the client still sends for a short
//     linger (as nginx's lingering_close), so the client reads the 4xx instead of a reset.
//   - between requests a keep-alive connection may sit idle for idle_timeout; then it is closed quietly.
//   - a client's EOF after a complete request (a half-close) does not end the request: the transport does not
//     read while a request runs, and the response is still written.
#pragma once
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "server/http/message.h"

namespace keel::server::http {

struct TransportOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  size_t max_body_bytes = size_t{64} << 20;
  size_t max_header_bytes = size_t{64} << 10;
  int io_threads = 2;
  int workers = 64;          // request workers: requests being handled (waiting or streaming) at once
  size_t max_queued = 4096;  // complete requests waiting for a worker beyond this get 503
  std::chrono::milliseconds idle_timeout{60000};   // keep-alive, between requests
  std::chrono::milliseconds head_timeout{10000};   // from a head's first byte (or the accept) to its end
  std::chrono::milliseconds body_timeout{30000};   // without any body byte arriving
  std::chrono::milliseconds write_timeout{30000};  // for one write to reach the socket
  std::chrono::milliseconds linger{2000};          // draining after an error response, before the close
  // A listening TCP socket to serve instead of binding host:port (keel serve's restart hands its socket to
  // the re-executed process, so the port never closes); −1: bind.
  int listen_fd = -1;
};

// Runs on a request worker; exceptions become a 500 through the ErrorResponder.
using Handler = std::function<void(const Request&, Response&)>;
// The body of a transport's own error (status, code, message) for the request's path ("" when the head did
// not parse far enough to name one).
using ErrorResponder = std::function<Response(int status, const std::string& code, const std::string& message,
                                              std::string_view path)>;

class Transport {
 public:
  Transport(TransportOptions options, Handler handler, ErrorResponder errors);
  ~Transport();  // stop()
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Raises RLIMIT_NOFILE's soft limit to the hard one, binds host:port (throws Error(invalid_argument) naming
  // them) and starts the io threads and the workers.
  void start();
  int port() const { return port_; }
  int listen_fd() const;  // the listening socket's descriptor (after start())
  // Accepts no more connections and returns once the accept loop has ended; the socket stays open and
  // listening (keel serve hands it to its restarted self), so new connections wait in its backlog.
  void stop_accepting();
  // Stops accepting, closes idle connections, waits for the running handlers (which should notice the
  // server stopping on their own), then closes everything.
  void stop();
  size_t open_connections() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

// Raises the soft RLIMIT_NOFILE to the hard limit; returns the soft limit now in force.
long raise_open_file_limit();

}  // namespace keel::server::http
