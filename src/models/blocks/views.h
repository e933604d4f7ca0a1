// Views the blocks take of their activations: head splits and column ranges of a [T, features] f32 tensor,
// with the row stride kept (no copies).
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace keel::models {

// [rows, heads · dim] (rows may be strided, each row contiguous) → [rows, heads, dim].
inline Tensor split_heads(const Tensor& m, int64_t heads, int64_t dim) {
  return m.strided_view({m.dim(0), heads, dim}, {m.stride_bytes(0), dim * 4, 4});
}

// Rows [begin, begin + n) of a tensor whose dimension 0 is tokens.
inline Tensor rows(const Tensor& t, int64_t begin, int64_t n) {
  return t.slice(0, begin, n);
}

}  // namespace keel::models
