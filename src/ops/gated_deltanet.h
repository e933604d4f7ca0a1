// Gated DeltaNet: the linear-attention mixer of qwen3_5 / qwen3_5_moe `linear_attention` layers, after the
// conv. Math: ../shared/specs/numerics.md "Gated DeltaNet"; reference: ops/reference/gated_deltanet_ref.h;
// transformers' torch_chunk_gated_delta_rule / torch_recurrent_gated_delta_rule with
// use_qk_l2norm_in_kernel=True.
//
// The op does the per-token preprocessing itself, in fp32 (as transformers does inside its kernels):
//   q ← q·rsqrt(Σq² + 1e-6) / √Dk,  k ← k·rsqrt(Σk² + 1e-6)     (when qk_l2norm; the scale is always applied)
//   β = sigmoid(b),  g = −exp(A_log)·softplus(a + dt_bias)
// then, per value head h with key head h / (Hv/Hk) (consecutive value heads share a key head:
// repeat_interleave), with state S [Dk, Dv]:  S ← e^g S;  v' = β(v − Sᵀk);  S ← S + k v'ᵀ;  o = Sᵀq.
// The CPU kernel runs this recurrence token by token at every T (fp32, S rounded to fp32 after each token),
// so a sequence fed in pieces of any sizes gives the same bits as one call: chunked prefill == one shot ==
// decode. Not the chunked WY form of numerics.md: that form rounds S only at chunk ends, and on the qwen3_5
// test models that alone (even with the chunk's arithmetic in float64) moved log-probs by up to 9.7e-5
// between splits, while its fp32 triangular solve added 5.5e-6·max of error at chunk 64; the recurrence is
// also faster on CPU (one pass over S per token).
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "core/tensor.h"

namespace keel::ops {

struct GatedDeltaNetParams {
  int64_t chunk_size = 64;  // the WY form's chunk, for backends that use it (the CPU kernel does not)
  bool qk_l2norm = true;    // use_qk_l2norm_in_kernel
  float l2norm_eps = 1e-6f;
};

// q, k     [T, Hk, Dk] f32   the conv output's q and k columns (rows contiguous, outer strides free)
// v        [T, Hv, Dv] f32
// a, b     [T, Hv]     f32   in_proj_a / in_proj_b outputs (raw)
// A_log, dt_bias [Hv]        f32/bf16/f16 weights
// state    [Hv, Dk, Dv] f32  contiguous; read and updated in place (zeros for a new sequence)
// out      [T, Hv, Dv] f32   written (before the gated norm)
void gated_deltanet(Backend& be, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a,
                    const Tensor& b, const Tensor& A_log, const Tensor& dt_bias, Tensor& state, Tensor& out,
                    const GatedDeltaNetParams& p);

// Bytes gated_deltanet takes from the pool, exactly: 0 when T = 0, else 4·(2·Hv + workers·(3·Dk + 2·Dv)) with
// workers = min(n_threads, Hv): the parameter floats and each worker's q, k, next k, Sᵀk and v' rows. The
// same for every T ≥ 1; chunk_size does not enter it on CPU.
int64_t gated_deltanet_workspace_bytes(int64_t T, int64_t Hv, int64_t Dk, int64_t Dv, int64_t chunk_size,
                                       int n_threads);

}  // namespace keel::ops
