#include "backend/cpu/embedding.h"

#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/matmul.h"

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

// One token per work item; a packed row is dequantized straight into its output row.
void CpuBackend::embedding(const EmbeddingArgs& a) {
  threads_.parallel_for(a.T, [&](int64_t begin, int64_t end, int) {
    for (int64_t t = begin; t < end; ++t) {
      auto* out = reinterpret_cast<float*>(a.out + t * a.out_row_bytes);
      if (a.bits == 0) {
        cpu::widen_row(a.table + a.ids[t] * a.row_bytes, a.dtype, out, a.d);
        continue;
      }
      cpu::PackedRow r;
      r.words = reinterpret_cast<const uint32_t*>(a.table + a.ids[t] * a.row_bytes);
      r.scales = a.scales + a.ids[t] * a.scale_row_bytes;
      r.biases = a.biases + a.ids[t] * a.scale_row_bytes;
      r.scale_dtype = a.scale_dtype, r.bits = a.bits, r.group_size = a.group_size;
      cpu::dequantize_packed(isa_, r, a.d, out);
    }
  });
}

}  // namespace keel
