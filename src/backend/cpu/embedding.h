// CPU kernel for embedding lookup: rows of a table in its stored dtype, widened to f32 (exactly); packed rows
// (MLX affine) are dequantized on lookup (matmul.h's dequantize_packed).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace keel::cpu {

// out[0, d) = table row (f32, bf16 or f16) widened to f32.
void widen_row(const void* row, DType dtype, float* out, int64_t d);

}  // namespace keel::cpu
