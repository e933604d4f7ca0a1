// Mamba2 SSD (structured state space duality) scan: the sequence mixer of nemotron_h `M` layers, after the
// conv. Math: ../shared/specs/numerics.md "Mamba2 mixer" step 4–5; reference: ops/reference/ssd_scan_ref.h.
//
// Per head h (group g = h / (H/G)), in fp32, for each token t of the call:
//   dt = clamp(softplus(dt_raw[t,h] + dt_bias[h]), dt_min, dt_max)   softplus(v) = v for v > 20
//   S[h] ← exp(dt·A[h])·S[h] + dt·x[t,h] ⊗ B[t,g]                       A[h] = −exp(A_log[h])
//   y[t,h] = S[h]·C[t,g] + D[h]·x[t,h]
// computed chunk by chunk (chunk_size Q tokens, chunk-local cumsums, always exp of differences), carrying S
// in place: a sequence fed in pieces gives the one-shot result within float rounding. The op does softplus,
// the clamp and A = −exp(A_log) itself (in fp32), so callers pass the raw projection and the stored
// parameters. The clamp is the config's `time_step_limit` as the fast kernels apply it (default (0, inf): no
// clamp); note that transformers' PyTorch path clamps at `time_step_min` instead (numerics.md) — the caller
// chooses. T = 1 (decode) takes a single-pass path over S.
#pragma once
#include <cstdint>
#include <limits>

#include "backend/backend.h"
#include "core/tensor.h"

namespace keel::ops {

struct SsdScanParams {
  int64_t chunk_size = 256;                               // Q: config `chunk_size`
  float dt_min = 0.0f;                                    // time_step_limit[0]
  float dt_max = std::numeric_limits<float>::infinity();  // time_step_limit[1]
};

// x       [T, H, P] f32      the conv output's x columns (innermost dimension contiguous, outer strides free)
// dt_raw  [T, H]    f32      the in_proj's dt columns, before dt_bias and softplus
// B, C    [T, G, N] f32
// A_log, dt_bias, D [H]      f32/bf16/f16 weights
// state   [H, P, N] f32      contiguous; read and updated in place (zeros for a new sequence)
// y       [T, H, P] f32      written; includes the D·x skip
void ssd_scan(Backend& be, const Tensor& x, const Tensor& dt_raw, const Tensor& B, const Tensor& C,
              const Tensor& A_log, const Tensor& dt_bias, const Tensor& D, Tensor& state, Tensor& y,
              const SsdScanParams& p);

// Bytes ssd_scan takes from be's pool for these shapes, exactly (the backend states it). The CPU's, on n
// threads, with Qe = min(Q, T): 4·(3H + G·Qe·pad16(Qe) + min(n, H)·(3·pad16(Qe) + P·N)) for T > 1 (per-group
// C·Bᵀ of one chunk; per worker dt/cumsum/coefficient rows and the state transposed), 4·3H for T = 1.
// Independent of T once T ≥ Q.
int64_t ssd_scan_workspace_bytes(const Backend& be, int64_t T, int64_t H, int64_t P, int64_t G, int64_t N,
                                 int64_t chunk_size);

}  // namespace keel::ops
