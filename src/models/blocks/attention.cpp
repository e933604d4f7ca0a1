#include "models/blocks/attention.h"

#include "core/error.h"
#include "load/state_spec.h"
#include "models/blocks/views.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/rope.h"

namespace keel::models {

AttentionWeights bind_attention(const WeightBinder& w, const AttentionSpec& s) {
  AttentionWeights a;
  const int64_t q = s.n_q * s.head_dim, kv = s.n_kv * s.head_dim;
  a.q = w.linear("q_proj", s.output_gate ? 2 * q : q, s.hidden, s.bias);
  a.k = w.linear("k_proj", kv, s.hidden, s.bias);
  a.v = w.linear("v_proj", kv, s.hidden, s.bias);
  a.o = w.linear("o_proj", s.hidden, q, s.bias);
  if (s.qk_norm) {
    a.q_norm = w.vec("q_norm.weight", s.head_dim);
    a.k_norm = w.vec("k_norm.weight", s.head_dim);
  }
  return a;
}

AttentionBlock::AttentionBlock(const AttentionSpec& spec, AttentionWeights weights)
    : s_(spec), w_(std::move(weights)) {
  if (s_.n_kv < 1 || s_.n_q % s_.n_kv != 0)
    throw_error(ErrorCode::invalid_file,
                "attention: num_attention_heads {} is not a multiple of num_key_value_heads {}", s_.n_q,
                s_.n_kv);
}

int64_t AttentionBlock::cache_bytes(int64_t capacity) const {
  // K and V [capacity, n_kv, head_dim] of kv_dtype
  return attention_kv_bytes(s_.n_kv, s_.head_dim, capacity, dtype_info(s_.kv_dtype).block_bytes);
}

void AttentionBlock::init_cache(LayerCache& cache, int64_t capacity, Backend& be) const {
  MemoryPool& pool = be.pool();  // rows past tokens() are never read: no fill
  cache.k = Tensor::empty(pool, s_.kv_dtype, {capacity, s_.n_kv, s_.head_dim}, "KV cache (keys)");
  cache.v = Tensor::empty(pool, s_.kv_dtype, {capacity, s_.n_kv, s_.head_dim}, "KV cache (values)");
}

void AttentionBlock::forward(const StepContext& ctx, size_t slot, const Tensor& x, Tensor& out) const {
  Backend& be = *ctx.be;
  const int64_t T = ctx.T, hd = s_.head_dim;
  const int64_t qw = s_.output_gate ? 2 * hd : hd;  // q_proj values per head
  Tensor q = Tensor::empty(ctx.pool(), DType::f32, {T, s_.n_q * qw}, "attention q");
  linear(be, w_.q, x, q);
  Tensor k = Tensor::empty(ctx.pool(), DType::f32, {T, s_.n_kv * hd}, "attention k");
  linear(be, w_.k, x, k);
  Tensor v = Tensor::empty(ctx.pool(), DType::f32, {T, s_.n_kv * hd}, "attention v");
  linear(be, w_.v, x, v);
  // Views share ownership: reset every view of q and k before their storage goes back.
  Tensor q3 = s_.output_gate ? q.reshape({T, s_.n_q, qw}).slice(2, 0, hd) : q.reshape({T, s_.n_q, hd});
  Tensor gate = s_.output_gate ? q.reshape({T, s_.n_q, qw}).slice(2, hd, hd) : Tensor();
  Tensor k3 = k.reshape({T, s_.n_kv, hd});
  if (s_.qk_norm) {
    ops::RmsNormParams np{s_.norm_eps, s_.qk_norm_scale};
    ops::rms_norm(be, q3, w_.q_norm, q3, np);
    ops::rms_norm(be, k3, w_.k_norm, k3, np);
  }
  if (s_.rope) {
    ops::rope(be, q3, ctx.rope_table, q3);
    ops::rope(be, k3, ctx.rope_table, k3);
  }
  // The step's keys and values go into each sequence's cache rows [past, past + n).
  for (const ItemRows& it : ctx.items) {
    LayerCache& c = (*it.caches)[slot];
    if (it.past + it.n > c.k.dim(0))
      throw_error(ErrorCode::invalid_argument,
                  "attention: {} + {} tokens exceed the sequence's capacity of {}", it.past, it.n,
                  c.k.dim(0));
    Tensor k_rows = c.k.slice(0, it.past, it.n), v_rows = c.v.slice(0, it.past, it.n);
    ops::store_kv_rows(be, k.slice(0, it.begin, it.n), k_rows);  // converted where the cache is f16
    ops::store_kv_rows(be, v.slice(0, it.begin, it.n), v_rows);
  }
  k = k3 = v = Tensor();
  Tensor att = Tensor::empty(ctx.pool(), DType::f32, {T, s_.n_q * hd}, "attention output");
  Tensor att3 = att.reshape({T, s_.n_q, hd});
  for (const ItemRows& it : ctx.items) {
    const LayerCache& c = (*it.caches)[slot];
    Tensor o = rows(att3, it.begin, it.n);
    ops::attention(be, rows(q3, it.begin, it.n), c.k, c.v, o, ops::AttentionParams{it.past, std::nullopt});
  }
  if (s_.output_gate) ops::activation_mul(be, gate, att3, att3, ops::Activation::sigmoid);
  q = q3 = gate = Tensor();
  linear(be, w_.o, att, out);
}

int64_t AttentionBlock::transient_bytes(const StepShape& s) const {
  const int64_t T = s.T, qb = f32_bytes(T * s_.n_q * s_.head_dim), kvb = f32_bytes(T * s_.n_kv * s_.head_dim);
  const int64_t qpb = s_.output_gate ? 2 * qb : qb;  // q_proj's output
  int64_t attn_ws = 0;
  for (int64_t n : s.item_tokens)
    attn_ws = std::max(attn_ws, ops::attention_workspace_bytes(*s.be, n, s_.n_q, s_.n_kv, s_.head_dim,
                                                               s_.head_dim, s_.kv_dtype));
  MemPlan m;
  m.alloc(qpb);
  m.workspace(linear_workspace_bytes(*s.be, w_.q, T));
  m.alloc(kvb);
  m.workspace(linear_workspace_bytes(*s.be, w_.k, T));
  m.alloc(kvb);
  m.workspace(linear_workspace_bytes(*s.be, w_.v, T));
  m.free(2 * kvb);
  m.alloc(qb);
  m.workspace(attn_ws);
  m.free(qpb);
  m.workspace(linear_workspace_bytes(*s.be, w_.o, T));
  return m.peak();
}

}  // namespace keel::models
