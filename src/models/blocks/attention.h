// Causal self-attention over a per-sequence KV cache: q/k/v projections, optional per-head q/k RMSNorm
// (qwen3), optional RoPE from the step's table (llama, qwen3; none for nemotron_h), GQA, o_proj. With
// output_gate (qwen3_5) q_proj yields [n_q, 2·head_dim] per token: each head's first head_dim values are its
// query, the last its gate, and o_proj reads attention ⊙ sigmoid(gate). The step's new keys and values are
// written into each sequence's cache at its offset, then every item's queries attend to rows [0, past + n) of
// its own cache (ops::attention: tiled online softmax, workspace independent of kv_len).
//
// Cache per sequence: K and V [capacity, n_kv, head_dim] f32, allocated once for the whole capacity.
#pragma once
#include <cstdint>

#include "models/blocks/block.h"
#include "models/weights.h"
#include "ops/norm.h"

namespace keel::models {

struct AttentionSpec {
  int64_t hidden = 0;
  int64_t n_q = 0;       // num_attention_heads
  int64_t n_kv = 0;      // num_key_value_heads
  int64_t head_dim = 0;  // the config's head_dim (not hidden / heads)
  bool bias = false;     // attention_bias: q/k/v/o biases
  bool qk_norm = false;  // RMSNorm over head_dim of q and k, before RoPE
  ops::NormScale qk_norm_scale = ops::NormScale::weight;
  float norm_eps = 1e-6f;
  bool rope = false;  // rotate q and k with the step's rope table (its width: the rotary part of a head)
  bool output_gate = false;     // qwen3_5: per-head query ‖ gate from q_proj, output × sigmoid(gate)
  DType kv_dtype = DType::f32;  // the KV cache's elements: f32, or f16 (ModelConfig::kv_cache_dtype)
};

struct AttentionWeights {
  Linear q, k, v, o;      // [n_q·hd (·2 with output_gate), d], [n_kv·hd, d], [n_kv·hd, d], [d, n_q·hd]
  Tensor q_norm, k_norm;  // [head_dim] when qk_norm
};

// Binds q_proj, k_proj, v_proj, o_proj (+ q_norm, k_norm) under `w`'s prefix (the attention module's).
AttentionWeights bind_attention(const WeightBinder& w, const AttentionSpec& s);

class AttentionBlock final : public Block {
 public:
  AttentionBlock(const AttentionSpec& spec, AttentionWeights weights);
  int64_t cache_bytes(int64_t capacity) const override;
  void init_cache(LayerCache& cache, int64_t capacity, Backend& be) const override;
  void forward(const StepContext& ctx, size_t slot, const Tensor& x, Tensor& out) const override;
  int64_t transient_bytes(const StepShape& s) const override;

 private:
  AttentionSpec s_;
  AttentionWeights w_;
};

}  // namespace keel::models
