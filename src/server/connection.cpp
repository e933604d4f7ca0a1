#include "server/connection.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

namespace keel::server {

namespace {

// addr:port of a sockaddr, in the form cpp-httplib reports it ("127.0.0.1", "::1").
bool address_of(const sockaddr_storage& sa, std::string& addr, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
    if (!inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf))) return false;
    port = ntohs(in->sin_port);
  } else if (sa.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sa);
    if (!inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf))) return false;
    port = ntohs(in6->sin6_port);
  } else {
    return false;
  }
  addr = buf;
  return true;
}

bool matches(int fd, const std::string& remote_addr, int remote_port, const std::string& local_addr,
             int local_port) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_storage peer{}, self{};
  socklen_t pl = sizeof(peer), sl = sizeof(self);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0) return false;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &sl) != 0) return false;
  std::string pa, sa;
  int pp = -1, sp = -1;
  if (!address_of(peer, pa, pp) || !address_of(self, sa, sp)) return false;
  return pp == remote_port && pa == remote_addr && sp == local_port && sa == local_addr;
}

}  // namespace

ClientConnection::ClientConnection(const std::string& remote_addr, int remote_port,
                                   const std::string& local_addr, int local_port) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    int fd = std::atoi(e->d_name);
    if (fd == dirfd(dir)) continue;
    if (matches(fd, remote_addr, remote_port, local_addr, local_port)) {
      fd_ = fd;
      break;
    }
  }
  closedir(dir);
}

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
