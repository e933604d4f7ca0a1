// Row access for ops that work along the last dimension: a tensor of rank 1..4 is rows × the last dimension,
// with the rows in row-major order of the outer dimensions (any byte strides) and each row contiguous.
#pragma once
#include <cstdint>

#include "backend/kernel_args.h"
#include "core/tensor.h"

namespace keel::ops {

inline int64_t row_count(const Tensor& t) {
  return t.ndim() == 0 ? 1 : t.numel() / (t.dim(-1) ? t.dim(-1) : 1);
}

// Address of the first element of row r (64-bit offsets).
inline char* row_ptr(const Tensor& t, int64_t r) {
  int64_t idx[kMaxDims] = {0, 0, 0, 0};
  for (int d = t.ndim() - 2; d >= 0; --d) {
    idx[d] = r % t.dim(d);
    r /= t.dim(d);
  }
  return static_cast<char*>(t.at(idx[0], idx[1], idx[2], idx[3]));
}

inline float* row_f32(const Tensor& t, int64_t r) {
  return reinterpret_cast<float*>(row_ptr(t, r));
}

// The rows of an f32 tensor of rank 1..4 as the backend sees them (kernel_args.h F32Rows).
inline F32Rows rows_of(const Tensor& t) {
  F32Rows r;
  r.data = static_cast<char*>(t.data());
  r.outer = t.ndim() > 0 ? t.ndim() - 1 : 0;
  for (int d = 0; d < r.outer; ++d) r.dim[d] = t.dim(d), r.stride[d] = t.stride_bytes(d);
  r.rows = row_count(t);
  r.n = t.ndim() > 0 ? t.dim(-1) : 1;
  return r;
}

// Same rank and sizes.
inline bool same_shape(const Tensor& a, const Tensor& b) {
  if (a.ndim() != b.ndim()) return false;
  for (int d = 0; d < a.ndim(); ++d)
    if (a.dim(d) != b.dim(d)) return false;
  return true;
}

}  // namespace keel::ops
