// Copies and fills of tensors in host memory, for backends whose tensors live there (the CPU backend; any
// backend that runs on host memory implements Backend::copy/upload/download/fill_zero with these). Each
// checks that its tensors are contiguous and that the byte counts agree (Error(invalid_argument) otherwise).
#pragma once
#include <cstdint>
#include <cstring>

#include "core/error.h"
#include "core/tensor.h"

namespace keel::host_memory {

// Throws unless `t` is contiguous and covers `bytes` bytes; `what` names the call and the operand.
inline void check_span(const Tensor& t, int64_t bytes, const char* what) {
  if (!t.is_contiguous())
    throw_error(ErrorCode::invalid_argument, "{}: a non-contiguous tensor {}", what, t.shape_string());
  if (t.nbytes() != bytes)
    throw_error(ErrorCode::invalid_argument, "{}: {} bytes into/from a tensor {} of {} bytes", what, bytes,
                t.shape_string(), t.nbytes());
  if (bytes > 0 && !t.data()) throw_error(ErrorCode::invalid_argument, "{}: a tensor without storage", what);
}

inline void copy(const Tensor& src, Tensor& dst) {
  check_span(src, src.nbytes(), "copy (source)");
  check_span(dst, src.nbytes(), "copy (destination)");
  if (src.nbytes() > 0) std::memmove(dst.data(), src.data(), static_cast<size_t>(src.nbytes()));
}

inline void upload(const void* host, int64_t bytes, Tensor& dst) {
  check_span(dst, bytes, "upload");
  if (bytes > 0) std::memcpy(dst.data(), host, static_cast<size_t>(bytes));
}

inline void download(const Tensor& src, void* host, int64_t bytes) {
  check_span(src, bytes, "download");
  if (bytes > 0) std::memcpy(host, src.data(), static_cast<size_t>(bytes));
}

inline void fill_zero(Tensor& dst) {
  check_span(dst, dst.nbytes(), "fill_zero");
  if (dst.nbytes() > 0) std::memset(dst.data(), 0, static_cast<size_t>(dst.nbytes()));
}

}  // namespace keel::host_memory
