// CPU kernel for the causal depthwise conv1d of Mamba2 and Gated DeltaNet, with carried state.
#pragma once
#include <cstdint>

#include "backend/cpu/cpu_backend.h"
#include "core/dtype.h"

namespace keel::cpu {

// kConv1dMaxKernel: backend/kernel_args.h (the op refuses wider kernels).
struct Conv1dArgs {
  const float* x = nullptr;  // [T, C], rows x_row floats apart
  int64_t x_row = 0;
  const void* w = nullptr;  // [C, K] in w_dtype, rows w_row elements apart
  int64_t w_row = 0;
  DType w_dtype = DType::f32;
  const float* bias = nullptr;  // [C] or null
  float* state = nullptr;       // [K−1, C] contiguous: the last K−1 inputs before this chunk; updated
  float* out = nullptr;         // [T, C], rows out_row floats apart
  int64_t out_row = 0;
  int64_t T = 0, C = 0, K = 0;
  bool silu = false;
};

// Channels [c_begin, c_end): out[t, c] = Σ_j w[c, j] · xx[t + j, c] (+ bias[c]), xx = concat(state, x), then
// silu when asked; then state = the last K−1 rows of xx for those channels. Each output's order: j ascending,
// then + bias, so a token's result does not depend on how the sequence was split.
void causal_conv1d_channels(CpuIsa isa, const Conv1dArgs& a, int64_t c_begin, int64_t c_end);

}  // namespace keel::cpu
