// Noticing that a client went away while its request waits or generates. The transport hands each request the
// connection's socket; while the request runs the transport does not read from it (the next request waits in
// the kernel), so a poll() on it sees only the peer's FIN or reset. The socket stays open until the request's
// worker is done with it (the transport closes a connection only when no request holds it), so the
// descriptor cannot be reused under the poll.
#pragma once

namespace keel::server {

class ClientConnection {
 public:
  // The accepted socket `fd` (not owned); −1: no socket, closed() always answers false.
  explicit ClientConnection(int fd) : fd_(fd) {}
  // True once the connection is gone: reset, or closed both ways (POLLHUP/POLLERR). Data the client may have
  // pipelined does not count. Cheap: one poll() with a zero timeout.
  //
  // A FIN from the peer (POLLRDHUP) alone is not "gone": a client that half-closes after its request
  // (shutdown(SHUT_WR), as some clients and proxies do) still reads the response, and TCP cannot tell that
  // from a client that closed its socket until something is written to it: a closed peer answers the write
  // with a reset, which closed() then reports. So a responder that sees half_closed() writes a keep-alive
  // (a probe) once; before the headers nothing can be written, and a half-closed request simply runs.
  bool closed() const;
  // The peer sent FIN (POLLRDHUP) and the connection is not gone (yet).
  bool half_closed() const;
  bool found() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace keel::server
