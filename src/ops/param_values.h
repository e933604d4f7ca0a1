// Reading small stored parameter vectors (A_log, dt_bias, D, router biases: a few hundred values) as f32 on
// the host, where the op widens them once per call. Large weights never go through here: kernels widen those
// tile by tile.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/tensor.h"

namespace keel::ops {

// Element i of a 1-D f32/bf16/f16 tensor (checked by the caller), widened to float.
inline float param_at(const Tensor& t, int64_t i) {
  const void* p = t.at(i);
  switch (t.dtype()) {
    case DType::bf16:
      return bf16_to_f32(*static_cast<const uint16_t*>(p));
    case DType::f16:
      return f16_to_f32(*static_cast<const uint16_t*>(p));
    default:
      return *static_cast<const float*>(p);
  }
}

}  // namespace keel::ops
