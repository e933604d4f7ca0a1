// Persistent memory per sequence, computed from the config before anything is allocated (specs/memory.md:
// "every layer reports its persistent state bytes per token and per sequence"). The one place these bytes are
// computed: the blocks' cache_bytes (src/models/blocks/, summed by Model::state_bytes) call the per-layer
// functions below, and the engine's plans and `keel inspect` read the same numbers. Element sizes are
// parameters: fp32 (4) is keel's CPU default for both.
//
//   Mamba2 layer, per sequence:  SSM  H·P·N·e            conv (K−1)·(I + 2·G·N)·e      (I = H·P)
//   DeltaNet layer, per sequence: S   Hv·Dk·Dv·e         conv (K−1)·(2·Hk·Dk + Hv·Dv)·e
//   attention layer, per token:  K and V  2·n_kv·head_dim·e
// The conv state keeps the last K−1 pre-conv inputs (numerics.md); transformers' cache keeps K columns.
#pragma once
#include <cstdint>
#include <vector>

#include "load/config.h"

namespace keel {

struct LayerStateSpec {
  LayerKind kind = LayerKind::mlp;
  int64_t recurrent_bytes = 0;     // per sequence: Mamba2 SSM state or DeltaNet state
  int64_t conv_bytes = 0;          // per sequence: the causal conv's carried inputs
  int64_t kv_bytes_per_token = 0;  // attention: keys and values of one token
};

struct StateSpec {
  std::vector<LayerStateSpec> layers;  // one per decoder layer (all zeros for mlp/moe blocks)
  int64_t recurrent_bytes_per_sequence = 0;
  int64_t conv_bytes_per_sequence = 0;
  int64_t state_bytes_per_sequence = 0;  // recurrent + conv, all layers
  int64_t kv_bytes_per_token = 0;        // all attention layers
  // state_bytes_per_sequence + tokens · kv_bytes_per_token; Error(invalid_argument) on int64 overflow.
  int64_t bytes_at_context(int64_t tokens) const;
};

int64_t mamba2_ssm_state_bytes(const Mamba2Config& m, int64_t elem_bytes = 4);
int64_t mamba2_conv_state_bytes(const Mamba2Config& m, int64_t elem_bytes = 4);
int64_t gated_deltanet_state_bytes(const GatedDeltaNetConfig& g, int64_t elem_bytes = 4);
int64_t gated_deltanet_conv_state_bytes(const GatedDeltaNetConfig& g, int64_t elem_bytes = 4);
int64_t attention_kv_bytes_per_token(const AttentionConfig& a, int64_t elem_bytes = 4);
// K and V rows of `tokens` tokens of one attention layer: 2·tokens·n_kv·head_dim·e.
int64_t attention_kv_bytes(int64_t n_kv, int64_t head_dim, int64_t tokens, int64_t elem_bytes = 4);

// Error(invalid_file) when the config's sizes overflow int64 bytes.
StateSpec compute_state_spec(const ModelConfig& cfg, int64_t state_elem_bytes = 4, int64_t kv_elem_bytes = 4);

}  // namespace keel
