// Mamba2 mixer (nemotron_h `M` layers), numerics as ../shared/specs/numerics.md "Mamba2 mixer":
//   in_proj(x) → z [I] ‖ xBC [I + 2GN] ‖ dt_raw [H];
//   per sequence: causal conv over xBC with its carried conv state (+bias, silu); SSD scan of x (H×P) with B,
//   C (G×N), dt = clamp(softplus(dt_raw + dt_bias), time_step_limit), A = −exp(A_log), D skip, carried SSM
//   state; gated RMSNorm in Mamba2 order (y ⊙ silu(z), then RMS over groups of I/G, × weight); out_proj.
// Cache per sequence: conv [K−1, I + 2GN] and SSM [H, P, N], f32, zeros for a new sequence, updated in place.
#pragma once
#include <cstdint>

#include "load/config.h"
#include "models/blocks/block.h"
#include "models/weights.h"

namespace keel::models {

struct Mamba2Weights {
  Linear in_proj;            // [I + (I + 2GN) + H, d]
  Tensor conv_w;             // conv1d.weight [I + 2GN, 1, K]
  Tensor conv_b;             // conv1d.bias [I + 2GN], undefined without use_conv_bias
  Tensor dt_bias, A_log, D;  // [H]
  Tensor norm;               // norm.weight [I]
  Linear out_proj;           // [d, I]
};

// Binds in_proj, conv1d, dt_bias, A_log, D, norm, out_proj under `w`'s prefix (the mixer's).
Mamba2Weights bind_mamba2(const WeightBinder& w, const Mamba2Config& m, int64_t hidden);

class Mamba2Block final : public Block {
 public:
  Mamba2Block(const Mamba2Config& m, float norm_eps, Mamba2Weights weights);
  int64_t cache_bytes(int64_t capacity) const override;
  void init_cache(LayerCache& cache, int64_t capacity, Backend& be) const override;
  void forward(const StepContext& ctx, size_t slot, const Tensor& x, Tensor& out) const override;
  int64_t transient_bytes(const StepShape& s) const override;
  bool recurrent() const override { return true; }

 private:
  Mamba2Config m_;
  float eps_;
  Mamba2Weights w_;
};

}  // namespace keel::models
