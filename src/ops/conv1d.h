// Causal depthwise conv1d with carried state (Mamba2's xBC conv, Gated DeltaNet's qkv conv).
//   out[t, c] = bias[c] + Σ_{j<K} w[c, j] · xx[t + j, c],   xx = concat(state, x)   ([K−1 + T, C])
// and afterwards state = the last K−1 rows of xx: the last K−1 inputs before the conv, whatever T is (also
// T < K−1, where part of the old state stays). A new sequence starts from zeros. Chunks in sequence give the
// same bits as the whole sequence at once.
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "core/tensor.h"

namespace keel::ops {

struct Conv1dParams {
  bool silu = false;  // apply silu to the output (both models do)
};

// x: f32 [T, C]; weight: [C, K] or transformers' conv1d.weight [C, 1, K], f32/bf16/f16; bias: [C]
// f32/bf16/f16 or an undefined Tensor(); state: f32 [K−1, C] contiguous, read and updated; out: f32 [T, C],
// distinct from x and state.
void causal_conv1d(Backend& be, const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& state,
                   Tensor& out, const Conv1dParams& p);

// Bytes causal_conv1d takes from be's pool (the backend states it; the CPU's: the bias widened to f32 when it
// is not f32 already, C floats, else 0). bias_dtype f32 for no bias.
int64_t causal_conv1d_workspace_bytes(const Backend& be, int64_t T, int64_t C, int64_t K, DType bias_dtype);

}  // namespace keel::ops
