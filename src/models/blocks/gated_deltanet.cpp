#include "models/blocks/gated_deltanet.h"

#include "core/error.h"
#include "load/state_spec.h"
#include "models/blocks/views.h"
#include "ops/conv1d.h"
#include "ops/gated_deltanet.h"
#include "ops/norm.h"

namespace keel::models {

namespace {
// The recurrent form at every step, so chunked prefill == one shot == decode bitwise (ops/gated_deltanet.h);
// 64 is transformers' torch_chunk_gated_delta_rule chunk, used only by the chunked form.
constexpr ops::GatedDeltaNetParams kDeltaNetParams{64, true, 1e-6f, ops::GatedDeltaNetForm::recurrent};
}  // namespace

GatedDeltaNetWeights bind_gated_deltanet(const WeightBinder& w, const GatedDeltaNetConfig& g,
                                         int64_t hidden) {
  const int64_t C = g.conv_dim(), V = g.value_dim(), Hv = g.num_value_heads;
  GatedDeltaNetWeights b;
  b.in_proj_qkv = w.linear("in_proj_qkv", C, hidden, false);
  b.in_proj_z = w.linear("in_proj_z", V, hidden, false);
  b.in_proj_b = w.linear("in_proj_b", Hv, hidden, false);
  b.in_proj_a = w.linear("in_proj_a", Hv, hidden, false);
  b.conv_w = w.conv_weight("conv1d.weight", C, g.conv_kernel);  // [C, 1, K] (HF) or [C, K, 1] (MLX)
  b.dt_bias = w.vec("dt_bias", Hv);
  b.A_log = w.vec("A_log", Hv);
  b.norm = w.vec("norm.weight", g.value_head_dim);
  b.out_proj = w.linear("out_proj", hidden, V, false);
  return b;
}

GatedDeltaNetBlock::GatedDeltaNetBlock(const GatedDeltaNetConfig& g, float norm_eps,
                                       GatedDeltaNetWeights weights)
    : g_(g), eps_(norm_eps), w_(std::move(weights)) {
  if (g_.num_key_heads < 1 || g_.num_value_heads % g_.num_key_heads != 0)
    throw_error(ErrorCode::invalid_file,
                "gated_deltanet: linear_num_value_heads {} is not a multiple of linear_num_key_heads {}",
                g_.num_value_heads, g_.num_key_heads);
  if (g_.conv_kernel < 2)
    throw_error(ErrorCode::invalid_file, "gated_deltanet: linear_conv_kernel_dim {} (must be ≥ 2)",
                g_.conv_kernel);
}

int64_t GatedDeltaNetBlock::cache_bytes(int64_t) const {
  return gated_deltanet_conv_state_bytes(g_) + gated_deltanet_state_bytes(g_);
}

void GatedDeltaNetBlock::init_cache(LayerCache& cache, int64_t, Backend& be) const {
  MemoryPool& pool = be.pool();
  cache.conv = Tensor::empty(pool, DType::f32, {g_.conv_kernel - 1, g_.conv_dim()}, "deltanet conv state");
  cache.recurrent = Tensor::empty(pool, DType::f32, {g_.num_value_heads, g_.key_head_dim, g_.value_head_dim},
                                  "deltanet recurrent state");
  be.fill_zero(cache.conv);
  be.fill_zero(cache.recurrent);
}

void GatedDeltaNetBlock::forward(const StepContext& ctx, size_t slot, const Tensor& x, Tensor& out) const {
  Backend& be = *ctx.be;
  const int64_t T = ctx.T, C = g_.conv_dim(), Kd = g_.key_dim(), V = g_.value_dim();
  const int64_t Hk = g_.num_key_heads, Hv = g_.num_value_heads, Dk = g_.key_head_dim, Dv = g_.value_head_dim;
  Tensor qkv = Tensor::empty(ctx.pool(), DType::f32, {T, C}, "deltanet in_proj_qkv");
  linear(be, w_.in_proj_qkv, x, qkv);
  Tensor z = Tensor::empty(ctx.pool(), DType::f32, {T, V}, "deltanet in_proj_z");
  linear(be, w_.in_proj_z, x, z);
  Tensor b = Tensor::empty(ctx.pool(), DType::f32, {T, Hv}, "deltanet in_proj_b");
  linear(be, w_.in_proj_b, x, b);
  Tensor a = Tensor::empty(ctx.pool(), DType::f32, {T, Hv}, "deltanet in_proj_a");
  linear(be, w_.in_proj_a, x, a);

  Tensor conv = Tensor::empty(ctx.pool(), DType::f32, {T, C}, "deltanet conv output");
  for (const ItemRows& it : ctx.items) {
    Tensor o = rows(conv, it.begin, it.n);
    ops::causal_conv1d(be, rows(qkv, it.begin, it.n), w_.conv_w, Tensor(), (*it.caches)[slot].conv, o,
                       ops::Conv1dParams{true});
  }
  qkv = Tensor();
  Tensor core = Tensor::empty(ctx.pool(), DType::f32, {T, Hv, Dv}, "deltanet core output");
  const ops::GatedDeltaNetParams& dp = kDeltaNetParams;
  for (const ItemRows& it : ctx.items) {
    const Tensor c = rows(conv, it.begin, it.n);
    Tensor o = rows(core, it.begin, it.n);
    ops::gated_deltanet(be, split_heads(c.slice(1, 0, Kd), Hk, Dk), split_heads(c.slice(1, Kd, Kd), Hk, Dk),
                        split_heads(c.slice(1, 2 * Kd, V), Hv, Dv), rows(a, it.begin, it.n),
                        rows(b, it.begin, it.n), w_.A_log, w_.dt_bias, (*it.caches)[slot].recurrent, o, dp);
  }
  conv = a = b = Tensor();
  Tensor core2 = core.reshape({T, V});
  ops::gated_rms_norm(be, core2, z, w_.norm, core2,
                      ops::GatedRmsNormParams{eps_, Dv, ops::GateOrder::norm_then_gate});
  z = Tensor();
  linear(be, w_.out_proj, core2, out);
}

// Mirrors forward()'s allocations in order.
int64_t GatedDeltaNetBlock::transient_bytes(const StepShape& s) const {
  const int64_t T = s.T, C = g_.conv_dim(), V = g_.value_dim(), Hv = g_.num_value_heads;
  const int64_t qkv = f32_bytes(T * C), z = f32_bytes(T * V), ab = f32_bytes(T * Hv), conv = f32_bytes(T * C);
  int64_t rule_ws = 0;
  for (int64_t n : s.item_tokens)
    rule_ws = std::max(rule_ws, ops::gated_deltanet_workspace_bytes(*s.be, n, Hv, g_.key_head_dim,
                                                                    g_.value_head_dim, kDeltaNetParams));
  MemPlan m;
  m.alloc(qkv);
  m.workspace(linear_workspace_bytes(*s.be, w_.in_proj_qkv, T));
  m.alloc(z);
  m.workspace(linear_workspace_bytes(*s.be, w_.in_proj_z, T));
  m.alloc(ab);
  m.workspace(linear_workspace_bytes(*s.be, w_.in_proj_b, T));
  m.alloc(ab);
  m.workspace(linear_workspace_bytes(*s.be, w_.in_proj_a, T));
  m.alloc(conv);
  m.workspace(ops::causal_conv1d_workspace_bytes(*s.be, T, C, w_.conv_w.dim(-1), DType::f32));
  m.free(qkv);
  m.alloc(f32_bytes(T * V));  // core
  m.workspace(rule_ws);
  m.free(conv + 2 * ab);
  m.free(z);
  m.workspace(linear_workspace_bytes(*s.be, w_.out_proj, T));
  return m.peak();
}

}  // namespace keel::models
