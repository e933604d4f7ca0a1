// State bytes from configs, against the formulas in ../shared/specs/numerics.md evaluated by hand (each
// literal below is worked out in the comment beside it), and against shapes taken from transformers' modules:
// Mamba2 SSM state [H, P, N], conv over I + 2·G·N channels; DeltaNet state [Hv, Dk, Dv], conv over 2·Hk·Dk +
// Hv·Dv channels; KV cache [n_kv, head_dim] per token for K and for V.
#include "load/state_spec.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "models/registry.h"

using namespace keel;
// The readers of every registered model type (src/models/<type>.cpp).
using keel::models::parse_model_config;

TEST(StateSpec, NemotronHShapedLikeNano30B) {
  // 52 layers: 23 Mamba2, 23 MoE, 6 attention (the pattern of NVIDIA-Nemotron-3-Nano-30B-A3B).
  std::string pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";
  ASSERT_EQ(pattern.size(), 52u);
  std::string text = R"({"model_type": "nemotron_h", "vocab_size": 131072, "hidden_size": 2688,
    "hybrid_override_pattern": ")" +
                     pattern + R"(", "num_attention_heads": 32, "num_key_value_heads": 2,
    "head_dim": 128, "mamba_num_heads": 64, "mamba_head_dim": 64, "n_groups": 8, "ssm_state_size": 128,
    "conv_kernel": 4, "n_routed_experts": 128, "num_experts_per_tok": 6, "moe_intermediate_size": 1856})";
  ModelConfig c = parse_model_config(text);
  ASSERT_EQ(c.count(LayerKind::mamba2), 23);
  ASSERT_EQ(c.count(LayerKind::attention), 6);
  StateSpec s = compute_state_spec(c);
  // SSM: 64·64·128·4 = 2,097,152 B per layer. Conv: (4−1)·(64·64 + 2·8·128)·4 = 3·6144·4 = 73,728 B per
  // layer.
  EXPECT_EQ(mamba2_ssm_state_bytes(c.mamba2), 2097152);
  EXPECT_EQ(mamba2_conv_state_bytes(c.mamba2), 73728);
  EXPECT_EQ(s.recurrent_bytes_per_sequence, 23 * 2097152);
  EXPECT_EQ(s.conv_bytes_per_sequence, 23 * 73728);
  EXPECT_EQ(s.state_bytes_per_sequence, 49930240);  // 23 · 2,170,880
  // KV: 2·2·128·4 = 2,048 B per token per attention layer; 6 layers → 12,288.
  EXPECT_EQ(s.kv_bytes_per_token, 12288);
  EXPECT_EQ(s.bytes_at_context(1000), 49930240 + 12288000);
  ASSERT_EQ(s.layers.size(), 52u);
  EXPECT_EQ(s.layers[1].kind, LayerKind::moe);
  EXPECT_EQ(s.layers[1].recurrent_bytes + s.layers[1].conv_bytes + s.layers[1].kv_bytes_per_token, 0);
  EXPECT_EQ(s.layers[5].kv_bytes_per_token, 2048);
  // bf16 KV halves only the KV figure.
  EXPECT_EQ(compute_state_spec(c, 4, 2).kv_bytes_per_token, 6144);
}

TEST(StateSpec, Qwen3_5GatedDeltaNet) {
  // Shaped like Qwen3.5-35B-A3B: 40 layers, every 4th full attention (10), 30 DeltaNet.
  std::string text = R"({"model_type": "qwen3_5_moe_text", "vocab_size": 248320, "hidden_size": 2048,
    "num_hidden_layers": 40, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
    "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "num_experts": 256, "num_experts_per_tok": 8,
    "moe_intermediate_size": 512})";
  ModelConfig c = parse_model_config(text);
  StateSpec s = compute_state_spec(c);
  // State: 32·128·128·4 = 2,097,152 B. Conv: (4−1)·(2·16·128 + 32·128)·4 = 3·8192·4 = 98,304 B.
  EXPECT_EQ(gated_deltanet_state_bytes(c.gated_deltanet), 2097152);
  EXPECT_EQ(gated_deltanet_conv_state_bytes(c.gated_deltanet), 98304);
  EXPECT_EQ(s.state_bytes_per_sequence, 30 * (2097152 + 98304));  // 65,863,680
  // KV: 2·2·256·4 = 4,096 B per attention layer per token; 10 layers.
  EXPECT_EQ(s.kv_bytes_per_token, 40960);
}

TEST(StateSpec, PlainTransformerHasNoPerSequenceState) {
  ModelConfig c = parse_model_config(R"({"model_type": "llama", "vocab_size": 100, "hidden_size": 64,
    "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128})");
  StateSpec s = compute_state_spec(c);
  EXPECT_EQ(s.state_bytes_per_sequence, 0);
  EXPECT_EQ(s.kv_bytes_per_token, 3 * 2 * 2 * 16 * 4);  // head_dim 64/4 = 16
}

TEST(StateSpec, OverflowIsAnErrorNotWraparound) {
  // Each size is accepted (< 2^31) but their product of bytes passes 2^63.
  ModelConfig c = parse_model_config(R"({"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 8,
    "hybrid_override_pattern": "M", "mamba_num_heads": 2147483647, "mamba_head_dim": 2147483647,
    "ssm_state_size": 2147483647, "n_groups": 1})");
  EXPECT_THROW(compute_state_spec(c), Error);
  ModelConfig ok = parse_model_config(R"({"model_type": "llama", "vocab_size": 100, "hidden_size": 64,
    "num_hidden_layers": 1, "num_attention_heads": 4, "intermediate_size": 128})");
  EXPECT_THROW(compute_state_spec(ok).bytes_at_context(int64_t{1} << 62), Error);
}
