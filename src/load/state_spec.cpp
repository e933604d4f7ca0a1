#include "load/state_spec.h"

#include <initializer_list>

#include "core/error.h"

namespace keel {

namespace {

int64_t product(std::initializer_list<int64_t> factors, const char* what) {
  int64_t p = 1;
  for (int64_t f : factors) {
    if (f < 0 || __builtin_mul_overflow(p, f, &p))
      throw_error(ErrorCode::invalid_file, "config sizes overflow 64 bits computing {}", what);
  }
  return p;
}

int64_t sum(int64_t a, int64_t b, const char* what) {
  int64_t s;
  if (__builtin_add_overflow(a, b, &s))
    throw_error(ErrorCode::invalid_file, "config sizes overflow 64 bits computing {}", what);
  return s;
}

}  // namespace

int64_t mamba2_ssm_state_bytes(const Mamba2Config& m, int64_t elem_bytes) {
  return product({m.num_heads, m.head_dim, m.ssm_state_size, elem_bytes}, "the Mamba2 SSM state");
}

int64_t mamba2_conv_state_bytes(const Mamba2Config& m, int64_t elem_bytes) {
  const char* what = "the Mamba2 conv state";
  int64_t channels =
      sum(product({m.num_heads, m.head_dim}, what), product({2, m.n_groups, m.ssm_state_size}, what), what);
  return product({m.conv_kernel - 1, channels, elem_bytes}, what);
}

int64_t gated_deltanet_state_bytes(const GatedDeltaNetConfig& g, int64_t elem_bytes) {
  return product({g.num_value_heads, g.key_head_dim, g.value_head_dim, elem_bytes}, "the DeltaNet state");
}

int64_t gated_deltanet_conv_state_bytes(const GatedDeltaNetConfig& g, int64_t elem_bytes) {
  const char* what = "the DeltaNet conv state";
  int64_t channels = sum(product({2, g.num_key_heads, g.key_head_dim}, what),
                         product({g.num_value_heads, g.value_head_dim}, what), what);
  return product({g.conv_kernel - 1, channels, elem_bytes}, what);
}

int64_t attention_kv_bytes_per_token(const AttentionConfig& a, int64_t elem_bytes) {
  return attention_kv_bytes(a.num_key_value_heads, a.head_dim, 1, elem_bytes);
}

int64_t attention_kv_bytes(int64_t n_kv, int64_t head_dim, int64_t tokens, int64_t elem_bytes) {
  return product({2, tokens, n_kv, head_dim, elem_bytes}, "the KV bytes");
}

StateSpec compute_state_spec(const ModelConfig& cfg, int64_t state_elem_bytes, int64_t kv_elem_bytes) {
  StateSpec spec;
  const char* what = "the state per sequence";
  for (const LayerSpec& layer : cfg.layers) {
    LayerStateSpec s;
    s.kind = layer.kind;
    switch (layer.kind) {
      case LayerKind::mamba2:
        s.recurrent_bytes = mamba2_ssm_state_bytes(cfg.mamba2, state_elem_bytes);
        s.conv_bytes = mamba2_conv_state_bytes(cfg.mamba2, state_elem_bytes);
        break;
      case LayerKind::gated_deltanet:
        s.recurrent_bytes = gated_deltanet_state_bytes(cfg.gated_deltanet, state_elem_bytes);
        s.conv_bytes = gated_deltanet_conv_state_bytes(cfg.gated_deltanet, state_elem_bytes);
        break;
      case LayerKind::attention:
        s.kv_bytes_per_token = attention_kv_bytes_per_token(cfg.attention, kv_elem_bytes);
        break;
      case LayerKind::mlp:
      case LayerKind::moe:
        break;
    }
    spec.recurrent_bytes_per_sequence = sum(spec.recurrent_bytes_per_sequence, s.recurrent_bytes, what);
    spec.conv_bytes_per_sequence = sum(spec.conv_bytes_per_sequence, s.conv_bytes, what);
    spec.kv_bytes_per_token = sum(spec.kv_bytes_per_token, s.kv_bytes_per_token, "the KV bytes per token");
    spec.layers.push_back(s);
  }
  spec.state_bytes_per_sequence = sum(spec.recurrent_bytes_per_sequence, spec.conv_bytes_per_sequence, what);
  return spec;
}

int64_t StateSpec::bytes_at_context(int64_t tokens) const {
  int64_t kv = 0, total = 0;
  if (tokens < 0 || __builtin_mul_overflow(tokens, kv_bytes_per_token, &kv) ||
      __builtin_add_overflow(state_bytes_per_sequence, kv, &total))
    throw_error(ErrorCode::invalid_argument, "state for {} tokens overflows 64 bits", tokens);
  return total;
}

}  // namespace keel
