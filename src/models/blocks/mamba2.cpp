#include "models/blocks/mamba2.h"

#include "core/error.h"
#include "load/state_spec.h"
#include "models/blocks/views.h"
#include "ops/conv1d.h"
#include "ops/norm.h"
#include "ops/ssd_scan.h"

namespace keel::models {

Mamba2Weights bind_mamba2(const WeightBinder& w, const Mamba2Config& m, int64_t hidden) {
  const int64_t I = m.intermediate(), C = m.conv_dim(), H = m.num_heads;
  Mamba2Weights b;
  b.in_proj = w.linear("in_proj", I + C + H, hidden, m.use_bias);
  b.conv_w = w.conv_weight("conv1d.weight", C, m.conv_kernel);  // [C, 1, K] (HF) or [C, K, 1] (MLX)
  if (m.use_conv_bias) b.conv_b = w.vec("conv1d.bias", C);
  b.dt_bias = w.vec("dt_bias", H);
  b.A_log = w.vec("A_log", H);
  b.D = w.vec("D", H);
  b.norm = w.vec("norm.weight", I);
  b.out_proj = w.linear("out_proj", hidden, I, m.use_bias);
  return b;
}

Mamba2Block::Mamba2Block(const Mamba2Config& m, float norm_eps, Mamba2Weights weights)
    : m_(m), eps_(norm_eps), w_(std::move(weights)) {
  if (m_.hidden_act != "silu" && m_.hidden_act != "swish")
    throw_error(ErrorCode::unsupported, "mamba2: mamba_hidden_act \"{}\" (only silu)", m_.hidden_act);
  if (m_.n_groups < 1 || m_.num_heads % m_.n_groups != 0)
    throw_error(ErrorCode::invalid_file, "mamba2: mamba_num_heads {} is not a multiple of n_groups {}",
                m_.num_heads, m_.n_groups);
  if (m_.norm_before_gate)
    throw_error(ErrorCode::unsupported, "mamba2: norm_before_gate (only gate, then norm)");
}

int64_t Mamba2Block::cache_bytes(int64_t) const {
  return mamba2_conv_state_bytes(m_) + mamba2_ssm_state_bytes(m_);
}

void Mamba2Block::init_cache(LayerCache& cache, int64_t, Backend& be) const {
  MemoryPool& pool = be.pool();
  cache.conv = Tensor::empty(pool, DType::f32, {m_.conv_kernel - 1, m_.conv_dim()}, "mamba2 conv state");
  cache.recurrent =
      Tensor::empty(pool, DType::f32, {m_.num_heads, m_.head_dim, m_.ssm_state_size}, "mamba2 SSM state");
  be.fill_zero(cache.conv);
  be.fill_zero(cache.recurrent);
}

void Mamba2Block::forward(const StepContext& ctx, size_t slot, const Tensor& x, Tensor& out) const {
  Backend& be = *ctx.be;
  const int64_t T = ctx.T, I = m_.intermediate(), C = m_.conv_dim(), H = m_.num_heads, P = m_.head_dim,
                G = m_.n_groups, N = m_.ssm_state_size;
  Tensor proj = Tensor::empty(ctx.pool(), DType::f32, {T, I + C + H}, "mamba2 in_proj");
  linear(be, w_.in_proj, x, proj);
  // Views share the projection's storage: all are reset before it goes back to the pool.
  Tensor z = proj.slice(1, 0, I), xBC = proj.slice(1, I, C), dt_raw = proj.slice(1, I + C, H);

  Tensor conv = Tensor::empty(ctx.pool(), DType::f32, {T, C}, "mamba2 conv output");
  for (const ItemRows& it : ctx.items) {
    Tensor o = rows(conv, it.begin, it.n);
    ops::causal_conv1d(be, rows(xBC, it.begin, it.n), w_.conv_w, w_.conv_b, (*it.caches)[slot].conv, o,
                       ops::Conv1dParams{true});
  }
  Tensor y = Tensor::empty(ctx.pool(), DType::f32, {T, H, P}, "mamba2 scan output");
  const ops::SsdScanParams sp{m_.chunk_size, static_cast<float>(m_.time_step_limit.first),
                              static_cast<float>(m_.time_step_limit.second)};
  for (const ItemRows& it : ctx.items) {
    const Tensor c = rows(conv, it.begin, it.n);
    Tensor yi = rows(y, it.begin, it.n);
    ops::ssd_scan(be, split_heads(c.slice(1, 0, I), H, P), rows(dt_raw, it.begin, it.n),
                  split_heads(c.slice(1, I, G * N), G, N), split_heads(c.slice(1, I + G * N, G * N), G, N),
                  w_.A_log, w_.dt_bias, w_.D, (*it.caches)[slot].recurrent, yi, sp);
  }
  conv = Tensor();
  Tensor y2 = y.reshape({T, I});
  ops::gated_rms_norm(be, y2, z, w_.norm, y2,
                      ops::GatedRmsNormParams{eps_, I / G, ops::GateOrder::gate_then_norm});
  proj = z = xBC = dt_raw = Tensor();
  linear(be, w_.out_proj, y2, out);
}

int64_t Mamba2Block::transient_bytes(const StepShape& s) const {
  const int64_t T = s.T, I = m_.intermediate(), C = m_.conv_dim(), H = m_.num_heads;
  const int64_t proj = f32_bytes(T * (I + C + H)), conv = f32_bytes(T * C), y = f32_bytes(T * I);
  int64_t scan_ws = 0;
  for (int64_t n : s.item_tokens)
    scan_ws = std::max(scan_ws, ops::ssd_scan_workspace_bytes(*s.be, n, H, m_.head_dim, m_.n_groups,
                                                              m_.ssm_state_size, m_.chunk_size));
  MemPlan m;
  m.alloc(proj);
  m.workspace(linear_workspace_bytes(*s.be, w_.in_proj, T));
  m.alloc(conv);
  m.workspace(ops::causal_conv1d_workspace_bytes(*s.be, T, C, w_.conv_w.dim(-1),
                                                 w_.conv_b.defined() ? w_.conv_b.dtype() : DType::f32));
  m.alloc(y);
  m.workspace(scan_ws);
  m.free(conv);
  m.free(proj);
  m.workspace(linear_workspace_bytes(*s.be, w_.out_proj, T));
  return m.peak();
}

}  // namespace keel::models
