#include "backend/cpu/embedding.h"

#include <cstring>

#include "backend/cpu/cpu_backend.h"

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

namespace keel {

// One token per work item.
void CpuBackend::embedding(const EmbeddingArgs& a) {
  threads_.parallel_for(a.T, [&](int64_t begin, int64_t end, int) {
    for (int64_t t = begin; t < end; ++t)
      cpu::widen_row(a.table + a.ids[t] * a.row_bytes, a.dtype,
                     reinterpret_cast<float*>(a.out + t * a.out_row_bytes), a.d);
  });
}

}  // namespace keel
