// Noticing that a client went away while its request waits or generates. cpp-httplib 0.11 gives a handler no
// socket, so the handler finds its connection's socket by its two addresses (the peer's and ours, which
// identify one TCP connection); the socket stays open for as long as the handler runs, on the handler's
// thread.
#pragma once
#include <string>

namespace keel::server {

class ClientConnection {
 public:
  // The accepted socket whose peer is remote_addr:remote_port and whose local end is local_addr:local_port;
  // when none is found (an unusual platform), closed() always answers false.
  ClientConnection(const std::string& remote_addr, int remote_port, const std::string& local_addr,
                   int local_port);
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
