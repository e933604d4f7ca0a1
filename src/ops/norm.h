// RMSNorm in the variants the models use, and the L2 norm of Gated DeltaNet's q/k. Activations f32 with any
// rank 1–4 and a contiguous last dimension (the normalized one); weights f32/bf16/f16 as stored. out may be
// x. No workspace. Each row's result depends only on that row (batch invariant).
//
// Which model uses which (transformers 5.x):
//   weight      — qwen3 (Qwen3RMSNorm, q/k norms too), nemotron_h (NemotronHRMSNorm), ones-initialized;
//   one_plus    — qwen3_5 / qwen3_5_moe / qwen3_next (Qwen3_5RMSNorm: output · (1 + w), zero-initialized),
//                 including their per-head q/k norms;
//   gated       — nemotron_h Mamba2 (MambaRMSNormGated: gate, then norm over groups of I/G, × w) and the
//                 DeltaNet output norm (Qwen3_5RMSNormGated: norm per head × w, then × silu(z); plain w).
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "core/tensor.h"

namespace keel::ops {

enum class NormScale { weight, one_plus_weight };

struct RmsNormParams {
  float eps = 1e-6f;
  NormScale scale = NormScale::weight;
};

// out = x / sqrt(mean(x²) + eps) ⊙ w (or ⊙ (1 + w)) over the last dimension d; weight [d].
void rms_norm(Backend& be, const Tensor& x, const Tensor& weight, Tensor& out, const RmsNormParams& p);

// gate_then_norm (Mamba2): v = x ⊙ silu(z); out = v / sqrt(mean_group(v²) + eps) ⊙ w
// norm_then_gate (Gated DeltaNet): out = (x / sqrt(mean_group(x²) + eps) ⊙ w) ⊙ silu(z)
using keel::GateOrder;

struct GatedRmsNormParams {
  float eps = 1e-6f;
  int64_t group_size = 0;  // channels per normalization group: I / n_groups (Mamba2), head_v_dim (DeltaNet)
  GateOrder order = GateOrder::gate_then_norm;
};

// x, z, out: [..., C] with C % group_size == 0; weight: [C], or [group_size] shared by every group
// (DeltaNet's per-head weight). out may be x (and z for gate_then_norm).
void gated_rms_norm(Backend& be, const Tensor& x, const Tensor& z, const Tensor& weight, Tensor& out,
                    const GatedRmsNormParams& p);

// out = x / sqrt(Σx² + eps) over the last dimension (transformers' / FLA's l2norm; Gated DeltaNet uses 1e-6).
void l2_norm(Backend& be, const Tensor& x, Tensor& out, float eps);

constexpr int64_t norm_workspace_bytes() {
  return 0;
}

}  // namespace keel::ops
