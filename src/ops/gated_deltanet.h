// Gated DeltaNet: the linear-attention mixer of qwen3_5 / qwen3_5_moe `linear_attention` layers, after the
// conv. Math: ../shared/specs/numerics.md "Gated DeltaNet"; reference: ops/reference/gated_deltanet_ref.h;
// transformers' torch_chunk_gated_delta_rule / torch_recurrent_gated_delta_rule with
// use_qk_l2norm_in_kernel=True.
//
// The op does the per-token preprocessing itself, in fp32 (as transformers does inside its kernels):
//   q ← q·rsqrt(Σq² + 1e-6) / √Dk,  k ← k·rsqrt(Σk² + 1e-6)     (when qk_l2norm; the scale is always applied)
//   β = sigmoid(b),  g = −exp(A_log)·softplus(a + dt_bias)
// then, per value head h with key head h / (Hv/Hk) (consecutive value heads share a key head:
// repeat_interleave), with state S [Dk, Dv]:  S ← e^g S;  v' = β(v − Sᵀk);  S ← S + k v'ᵀ;  o = Sᵀq. T > 1
// runs the chunked (WY) form chunk by chunk (chunk_size tokens, chunk-local cumsums of g) carrying S in
// place; T = 1 runs the recurrence directly. A sequence fed in pieces matches one call within float rounding.
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "core/tensor.h"

namespace keel::ops {

struct GatedDeltaNetParams {
  int64_t chunk_size = 64;
  bool qk_l2norm = true;  // use_qk_l2norm_in_kernel
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

// Bytes gated_deltanet takes from the pool, exactly: 4·2·Hv parameter floats plus, per worker
// (min(n_threads, Hv) of them), with Ce = min(chunk_size, T) and Cp = pad16(Ce):
//   T = 1: 2·Dk + 2·Dv floats;  T > 1: Ce·(3·Dk + Dv + Cp) + 2·Cp + max(Cp, pad16(Dk)) + Dk·Cp floats.
// Independent of T once T ≥ chunk_size.
int64_t gated_deltanet_workspace_bytes(int64_t T, int64_t Hv, int64_t Dk, int64_t Dv, int64_t chunk_size,
                                       int n_threads);

}  // namespace keel::ops
