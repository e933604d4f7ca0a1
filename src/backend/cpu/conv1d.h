// CPU kernel for the causal depthwise conv1d of Mamba2 and Gated DeltaNet, with carried state.
#pragma once
#include <cstdint>

#include "backend/cpu/cpu_backend.h"

namespace keel::cpu {

// keel::Conv1dArgs (backend/kernel_args.h; kConv1dMaxKernel there too), its bias read from `bias` instead:
// [C] f32 (a.bias widened by the caller) or null. Channels [c_begin, c_end): out[t, c] = Σ_j w[c, j] ·
// xx[t + j, c] (+ bias[c]), xx = concat(state, x), then silu when asked; then state = the last K−1 rows of xx
// for those channels. Each output's order: j ascending, then + bias, so a token's result does not depend on
// how the sequence was split.
void causal_conv1d_channels(CpuIsa isa, const Conv1dArgs& a, const float* bias, int64_t c_begin,
                            int64_t c_end);

}  // namespace keel::cpu
