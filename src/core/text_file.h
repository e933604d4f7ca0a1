// Reading a small file whole (JSON configs, templates) without the ways a start-up can hang or blow up: the
// path must name a regular file (a FIFO, a device such as /dev/zero, a directory or a symlink loop is refused
// with a clear error instead of being waited on or read forever) of at most `max_bytes`.
#pragma once
#include <cstdint>
#include <string>

namespace keel {

// The file's bytes. Throws Error(invalid_file) "<path>: <why>" (cannot open: <errno text> / not a regular
// file / N bytes, more than the M allowed / cannot read).
std::string read_regular_file(const std::string& path, int64_t max_bytes);

}  // namespace keel
