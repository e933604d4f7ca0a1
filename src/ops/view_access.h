// Host-side access the op layer needs before it hands raw pointers to a kernel: small stored parameter
// vectors (A_log, dt_bias, D, router biases: a few hundred values) widened to f32 once per call, and byte
// strides turned into float strides. Large weights never go through here: kernels widen those tile by tile.
#pragma once
#include <cstdint>
#include <string_view>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"

namespace keel::ops {

// Element i of a 1-D f32/bf16/f16 tensor (checked by the caller), widened to float.
inline float param_at(const Tensor& t, int64_t i) {
  return stored_f32(t.at(i), t.dtype(), 0);
}

// The stride of dimension `dim` of an f32 view in floats; throws when it is not a whole number of floats.
inline int64_t stride_floats(std::string_view op, std::string_view name, const Tensor& t, int dim) {
  if (t.stride_bytes(dim) % 4 != 0)
    throw_error(ErrorCode::invalid_argument, "{}: {} {} has a stride of {} bytes, not whole floats", op, name,
                t.shape_string(), t.stride_bytes(dim));
  return t.stride_bytes(dim) / 4;
}

// The stride of dimension `dim` of a view in elements of its dtype; throws when it is not whole elements.
inline int64_t stride_elements(std::string_view op, std::string_view name, const Tensor& t, int dim) {
  const int64_t e = dtype_info(t.dtype()).block_bytes;
  if (t.stride_bytes(dim) % e != 0)
    throw_error(ErrorCode::invalid_argument, "{}: {} {} has a stride of {} bytes, not whole {} elements", op,
                name, t.shape_string(), t.stride_bytes(dim), dtype_name(t.dtype()));
  return t.stride_bytes(dim) / e;
}

}  // namespace keel::ops
