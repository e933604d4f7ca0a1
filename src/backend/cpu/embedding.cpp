#include "backend/cpu/embedding.h"

#include <cstring>

namespace keel::cpu {

void widen_row(const void* row, DType dtype, float* out, int64_t d) {
  const auto* h = static_cast<const uint16_t*>(row);
  switch (dtype) {
    case DType::bf16:
      for (int64_t i = 0; i < d; ++i) out[i] = bf16_to_f32(h[i]);
      break;
    case DType::f16:
      for (int64_t i = 0; i < d; ++i) out[i] = f16_to_f32(h[i]);
      break;
    default:
      std::memcpy(out, row, static_cast<size_t>(d) * 4);
      break;
  }
}

}  // namespace keel::cpu
