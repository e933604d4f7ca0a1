#include "core/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace keel {

std::string read_regular_file(const std::string& path, int64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below as not a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw_error(ErrorCode::invalid_file, "{}: cannot open: {}", path, std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw_error(ErrorCode::invalid_file, "{}: cannot read: {}", path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw_error(ErrorCode::invalid_file, "{}: a directory, not a file", path);
  if (!S_ISREG(st.st_mode)) throw_error(ErrorCode::invalid_file, "{}: not a regular file", path);
  if (st.st_size > max_bytes)
    throw_error(ErrorCode::invalid_file, "{}: {} bytes, more than the {} allowed", path, st.st_size,
                max_bytes);
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw_error(ErrorCode::invalid_file, "{}: cannot read: {}", path,
                  n < 0 ? std::strerror(errno) : "truncated");
    got += static_cast<size_t>(n);
  }
  return text;
}

}  // namespace keel
