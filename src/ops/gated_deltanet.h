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
// Two forms of the same math (GatedDeltaNetForm):
// - recurrent (what the models run): token by token at every T (fp32, S rounded to fp32 after each token),
//   so a sequence fed in pieces of any sizes gives the same bits as one call: chunked prefill == one shot ==
//   decode. On CPU it is also 2–3× faster than the WY form (one pass over S per token).
// - chunked: the WY form of numerics.md over chunks of chunk_size tokens (chunk-local cumsums of g, the
//   triangular solve through (I + A), S carried in place and updated once per chunk); T = 1 runs the
//   recurrence. It rounds S only at chunk ends, so pieces match one call within float rounding, not bitwise
//   (on the qwen3_5 test models that alone moved log-probs by up to 9.7e-5 between splits), and its fp32
//   triangular solve adds ~5.5e-6·max of error at chunk 64. Kept as the form GPU backends will use (a chunk's
//   work is matrix products) and as a second implementation the recurrence is checked against.
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "core/tensor.h"

namespace keel::ops {

enum class GatedDeltaNetForm { recurrent, chunked };

struct GatedDeltaNetParams {
  int64_t chunk_size = 64;  // tokens per chunk of the chunked form (unused by the recurrent one)
  bool qk_l2norm = true;    // use_qk_l2norm_in_kernel
  float l2norm_eps = 1e-6f;
  GatedDeltaNetForm form = GatedDeltaNetForm::recurrent;
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

// Bytes gated_deltanet takes from be's pool, exactly (the backend states it). The CPU's: 0 when T = 0, else
// 4·(2·Hv + workers·F) with workers = min(threads, Hv): the parameter floats and each worker's scratch of F
// floats:
//   recurrent, or chunked at T = 1:  F = 3·Dk + 2·Dv   (q, k, next k, Sᵀk and v' rows);
//   chunked at T > 1, with Ce = min(chunk_size, T), Cp = pad16(Ce):
//     F = Ce·(3·Dk + Dv + Cp) + 2·Cp + max(Cp, pad16(Dk)) + Dk·Cp   (Q, K, W, U, A, γ, β, a row, Kᵀ).
// Independent of T once T ≥ chunk_size (recurrent: for every T ≥ 1).
int64_t gated_deltanet_workspace_bytes(const Backend& be, int64_t T, int64_t Hv, int64_t Dk, int64_t Dv,
                                       const GatedDeltaNetParams& p);

}  // namespace keel::ops
