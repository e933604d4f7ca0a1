// Gated DeltaNet mixer (qwen3_5 / qwen3_5_moe `linear_attention` layers), transformers' Qwen3_5GatedDeltaNet:
//   in_proj_qkv(x) → q [Hk·Dk] ‖ k [Hk·Dk] ‖ v [Hv·Dv]  (the conv's channels, in this order);
//   in_proj_z(x) → z [Hv, Dv];  in_proj_b(x) → b [Hv];  in_proj_a(x) → a [Hv];
//   per sequence: causal depthwise conv over q‖k‖v with its carried conv state (no bias) + silu; then
//   ops::gated_deltanet (l2norm of q and k, q·Dk^-½, β = sigmoid(b), g = −exp(A_log)·softplus(a + dt_bias),
//   value head h reads key head h / (Hv/Hk), carried state S [Hv, Dk, Dv]);
//   gated RMSNorm in DeltaNet order, per value head: rms_norm(o) ⊙ w ⊙ silu(z) (plain w, not 1 + w); then
//   out_proj.
// Cache per sequence: conv [K−1, 2·Hk·Dk + Hv·Dv] and S [Hv, Dk, Dv], f32, zeros for a new sequence, updated
// in place (so a failed step leaves them half-updated: recurrent()).
#pragma once
#include <cstdint>

#include "load/config.h"
#include "models/blocks/block.h"
#include "models/weights.h"

namespace keel::models {

struct GatedDeltaNetWeights {
  Linear in_proj_qkv;     // [2·Hk·Dk + Hv·Dv, d]
  Linear in_proj_z;       // [Hv·Dv, d]
  Linear in_proj_b;       // [Hv, d]
  Linear in_proj_a;       // [Hv, d]
  Tensor conv_w;          // conv1d.weight [2·Hk·Dk + Hv·Dv, 1, K]
  Tensor dt_bias, A_log;  // [Hv]
  Tensor norm;            // norm.weight [Dv], shared by every value head
  Linear out_proj;        // [d, Hv·Dv]
};

// Binds in_proj_{qkv,z,b,a}, conv1d, dt_bias, A_log, norm, out_proj under `w`'s prefix (the linear_attn
// module's).
GatedDeltaNetWeights bind_gated_deltanet(const WeightBinder& w, const GatedDeltaNetConfig& g, int64_t hidden);

class GatedDeltaNetBlock final : public Block {
 public:
  GatedDeltaNetBlock(const GatedDeltaNetConfig& g, float norm_eps, GatedDeltaNetWeights weights);
  int64_t cache_bytes(int64_t capacity) const override;
  void init_cache(LayerCache& cache, int64_t capacity, Backend& be) const override;
  void forward(const StepContext& ctx, size_t slot, const Tensor& x, Tensor& out) const override;
  int64_t transient_bytes(const StepShape& s) const override;
  bool recurrent() const override { return true; }

 private:
  GatedDeltaNetConfig g_;
  float eps_;
  GatedDeltaNetWeights w_;
};

}  // namespace keel::models
