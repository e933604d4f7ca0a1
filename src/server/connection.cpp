#include "server/connection.h"

#include <poll.h>

namespace keel::server {

namespace {

short poll_events(int fd) {
  pollfd p{fd, static_cast<short>(POLLRDHUP), 0};
  if (poll(&p, 1, 0) <= 0) return 0;
  return p.revents;
}

}  // namespace

bool ClientConnection::closed() const {
  if (fd_ < 0) return false;
  return (poll_events(fd_) & (POLLHUP | POLLERR | POLLNVAL)) != 0;
}

bool ClientConnection::half_closed() const {
  if (fd_ < 0) return false;
  const short ev = poll_events(fd_);
  return (ev & POLLRDHUP) != 0 && (ev & (POLLHUP | POLLERR | POLLNVAL)) == 0;
}

}  // namespace keel::server
