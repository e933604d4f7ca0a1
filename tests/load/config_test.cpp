// config.json parsing for every supported model_type and every layer-list vocabulary. Expected values are the
// ones written in each config text below, or transformers 5.x's defaults for fields the text leaves out
// (quoted from configuration_<model>.py beside each check).
#include "load/config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "load/json_util.h"
#include "models/registry.h"

using namespace keel;
// The readers of every registered model type (src/models/<type>.cpp).
using keel::models::parse_model_config;
using K = LayerKind;

namespace {

std::vector<K> kinds(const ModelConfig& c) {
  std::vector<K> out;
  for (const LayerSpec& l : c.layers) out.push_back(l.kind);
  return out;
}

void expect_config_error(const std::string& text, ErrorCode code, const std::vector<std::string>& needles) {
  try {
    parse_model_config(text, "DIR/config.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "'" << n << "' not in: " << e.what();
    return;
  }
  ADD_FAILURE() << "no error for: " << text;
}

// Shaped like NVIDIA-Nemotron-3-Nano-30B-A3B, as transformers 5.x writes it (layers_block_type, tagged
// infinity).
const char* kNemotronV5 = R"({
  "model_type": "nemotron_h", "architectures": ["NemotronHForCausalLM"],
  "vocab_size": 131072, "hidden_size": 2688, "num_hidden_layers": 6,
  "layers_block_type": ["linear_attention", "moe", "full_attention", "linear_attention", "moe", "mlp"],
  "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128,
  "mamba_num_heads": 64, "mamba_head_dim": 64, "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4,
  "chunk_size": 128, "time_step_limit": [0.0, {"__float__": "Infinity"}], "time_step_min": 0.001,
  "intermediate_size": 1856, "mlp_hidden_act": "relu2",
  "n_routed_experts": 128, "num_experts_per_tok": 6, "moe_intermediate_size": 1856,
  "moe_shared_expert_intermediate_size": 3712, "routed_scaling_factor": 2.5, "n_group": 1, "topk_group": 1,
  "norm_topk_prob": true, "layer_norm_epsilon": 1e-05, "tie_word_embeddings": false,
  "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0, "max_position_embeddings": 262144
})";

// Older NVIDIA remote-code files: hybrid_override_pattern, bare Infinity, attention_head_dim.
const char* kNemotronOld = R"({
  "model_type": "nemotron_h", "vocab_size": 131072, "hidden_size": 4096, "num_hidden_layers": 5,
  "hybrid_override_pattern": "M-M*-",
  "num_attention_heads": 32, "num_key_value_heads": 8, "attention_head_dim": 128,
  "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4,
  "time_step_limit": [0.0, Infinity], "intermediate_size": 21504, "layer_norm_epsilon": 1e-05
})";

}  // namespace

TEST(Config, NemotronHTransformers5Vocabulary) {
  ModelConfig c = parse_model_config(kNemotronV5);
  EXPECT_EQ(c.model_type, "nemotron_h");
  EXPECT_EQ(kinds(c), (std::vector<K>{K::mamba2, K::moe, K::attention, K::mamba2, K::moe, K::mlp}));
  for (const LayerSpec& l : c.layers) EXPECT_FALSE(l.ffn.has_value());
  EXPECT_EQ(c.count(K::mamba2), 2);
  EXPECT_EQ(c.hidden_size, 2688);
  EXPECT_EQ(c.attention.num_attention_heads, 32);
  EXPECT_EQ(c.attention.num_key_value_heads, 2);
  EXPECT_EQ(c.attention.head_dim, 128);  // ≠ 2688 / 32 = 84: the config's value wins
  EXPECT_FALSE(c.attention.rope.has_value());
  EXPECT_EQ(c.mamba2.num_heads, 64);
  EXPECT_EQ(c.mamba2.intermediate(), 64 * 64);
  EXPECT_EQ(c.mamba2.conv_dim(), 64 * 64 + 2 * 8 * 128);
  EXPECT_EQ(c.mamba2.time_step_limit.first, 0.0);
  EXPECT_TRUE(std::isinf(c.mamba2.time_step_limit.second));
  EXPECT_EQ(c.mamba2.hidden_act, "silu");  // default mamba_hidden_act
  EXPECT_FALSE(c.mamba2.use_bias);         // default use_bias
  EXPECT_TRUE(c.mamba2.use_conv_bias);     // default use_conv_bias
  EXPECT_EQ(c.mlp.intermediate_size, 1856);
  EXPECT_EQ(c.mlp.hidden_act, "relu2");
  EXPECT_EQ(c.moe.num_experts, 128);
  EXPECT_EQ(c.moe.num_experts_per_tok, 6);
  EXPECT_EQ(c.moe.shared_expert_intermediate_size, 3712);
  EXPECT_EQ(c.moe.n_shared_experts, 1);  // default n_shared_experts
  EXPECT_DOUBLE_EQ(c.moe.routed_scaling_factor, 2.5);
  EXPECT_FALSE(c.moe.latent_size.has_value());
  EXPECT_EQ(c.moe.hidden_act, "relu2");
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{2});
  EXPECT_EQ(c.pad_token_id, 0);
  EXPECT_EQ(c.max_position_embeddings, 262144);
}

TEST(Config, NemotronHPatternAndBareInfinity) {
  ModelConfig c = parse_model_config(kNemotronOld);
  EXPECT_EQ(kinds(c), (std::vector<K>{K::mamba2, K::mlp, K::mamba2, K::attention, K::mlp}));
  EXPECT_EQ(c.attention.head_dim, 128);
  EXPECT_EQ(c.attention.num_key_value_heads, 8);
  EXPECT_TRUE(std::isinf(c.mamba2.time_step_limit.second));
  EXPECT_GT(c.mamba2.time_step_limit.second, 0);
  // Defaults from configuration_nemotron_h.py for the fields this file leaves out.
  EXPECT_EQ(c.mamba2.chunk_size, 128);
  EXPECT_EQ(c.mamba2.expand, 2);
  EXPECT_DOUBLE_EQ(c.mamba2.time_step_min, 0.001);
  EXPECT_DOUBLE_EQ(c.mamba2.time_step_max, 0.1);
  EXPECT_EQ(c.mlp.hidden_act, "relu2");
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{2});
  EXPECT_EQ(c.pad_token_id, 0);
  EXPECT_EQ(c.max_position_embeddings, 4096);
  EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(Config, NemotronHOlderLayersBlockTypeAndAliases) {
  std::string text = R"({"model_type": "nemotron_h", "vocab_size": 1000, "hidden_size": 64,
    "layers_block_type": ["mamba", "attention", "mlp", "moe"],
    "num_attention_heads": 4, "num_key_value_heads": null, "mamba_num_heads": 8, "pad_token_id": null,
    "eos_token_id": null, "mamba_head_dim": 16,
    "mamba_n_groups": 2, "mamba_d_conv": 3, "mamba_chunk_size": 32, "mamba_dt_limit": [0.001, 0.5],
    "mamba_conv_bias": false, "ssm_state_size": 16, "intermediate_size": 96,
    "num_local_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "moe_latent_size": 16})";
  ModelConfig c = parse_model_config(text);
  EXPECT_EQ(kinds(c), (std::vector<K>{K::mamba2, K::attention, K::mlp, K::moe}));
  EXPECT_EQ(c.attention.num_key_value_heads, 4);  // null → num_attention_heads
  EXPECT_EQ(c.bos_token_id, 1);                   // absent → default 1 (configuration_nemotron_h.py)
  EXPECT_FALSE(c.pad_token_id.has_value());       // explicit null → none (the default would be 0)
  EXPECT_TRUE(c.eos_token_ids.empty());           // explicit null → none (the default would be 2)
  EXPECT_EQ(c.attention.head_dim, 128);           // default head_dim
  EXPECT_EQ(c.mamba2.n_groups, 2);
  EXPECT_EQ(c.mamba2.conv_kernel, 3);
  EXPECT_EQ(c.mamba2.chunk_size, 32);
  EXPECT_DOUBLE_EQ(c.mamba2.time_step_limit.first, 0.001);
  EXPECT_DOUBLE_EQ(c.mamba2.time_step_limit.second, 0.5);
  EXPECT_FALSE(c.mamba2.use_conv_bias);
  EXPECT_EQ(c.moe.num_experts, 4);
  EXPECT_EQ(c.moe.latent_size, 16);
  EXPECT_EQ(c.moe.shared_expert_intermediate_size, 7688);  // default moe_shared_expert_intermediate_size
}

TEST(Config, NemotronHLayerListErrors) {
  std::string base =
      R"("model_type": "nemotron_h", "vocab_size": 1000, "hidden_size": 64, "num_attention_heads": 4,
    "mamba_num_heads": 8, "mamba_head_dim": 16, "intermediate_size": 96)";
  expect_config_error(
      "{" + base + R"(, "hybrid_override_pattern": "M-M*-", "num_hidden_layers": 6})",
      ErrorCode::invalid_file,
      {"DIR/config.json: nemotron_h: hybrid_override_pattern has 5 entries but num_hidden_layers is 6"});
  expect_config_error("{" + base + R"(, "hybrid_override_pattern": "M-X"})", ErrorCode::invalid_file,
                      {"hybrid_override_pattern[2]", "'X'"});
  expect_config_error("{" + base + R"(, "layers_block_type": ["mamba", "conv"]})", ErrorCode::invalid_file,
                      {"layers_block_type[1]", "conv"});
  expect_config_error(
      "{" + base + R"(, "layers_block_type": ["mamba", "mlp"], "hybrid_override_pattern": "M*"})",
      ErrorCode::invalid_file, {"layers_block_type and hybrid_override_pattern"});
  expect_config_error("{" + base + "}", ErrorCode::invalid_file,
                      {"hybrid_override_pattern", "layers_block_type"});
  expect_config_error("{" + base + R"(, "hybrid_override_pattern": ""})", ErrorCode::invalid_file, {"empty"});
}

TEST(Config, MissingAndInconsistentFieldsAreNamed) {
  expect_config_error(R"({"model_type": "nemotron_h", "vocab_size": 10, "hybrid_override_pattern": "M"})",
                      ErrorCode::invalid_file, {"missing required field 'hidden_size'"});
  expect_config_error(
      R"({"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 8, "hybrid_override_pattern": "M"})",
      ErrorCode::invalid_file, {"missing required field 'mamba_num_heads'"});
  expect_config_error(
      R"({"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 8, "hybrid_override_pattern": "E",
                          "n_routed_experts": 4, "moe_intermediate_size": 8})",
      ErrorCode::invalid_file, {"missing required field 'num_experts_per_tok'"});
  expect_config_error(
      R"({"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 8, "hybrid_override_pattern": "M",
                          "mamba_num_heads": 6, "mamba_head_dim": 4, "n_groups": 4})",
      ErrorCode::invalid_file, {"mamba_num_heads 6 is not a multiple of n_groups 4"});
  expect_config_error(
      R"({"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 8, "hybrid_override_pattern": "M",
                          "mamba_num_heads": 8, "mamba_head_dim": 4, "time_step_limit": [0.1]})",
      ErrorCode::invalid_file, {"time_step_limit"});
  expect_config_error(
      R"({"model_type": "qwen3", "vocab_size": 10, "hidden_size": 4096.5, "num_hidden_layers": 2})",
      ErrorCode::invalid_file, {"'hidden_size' must be a positive integer, got 4096.5"});
  expect_config_error(R"({"model_type": "qwen3", "vocab_size": true, "hidden_size": 8})",
                      ErrorCode::invalid_file, {"'vocab_size'"});
  expect_config_error(R"({"model_type": "qwen3", "vocab_size": 10, "hidden_size": -8})",
                      ErrorCode::invalid_file, {"'hidden_size'", "-8"});
  expect_config_error(R"({"model_type": "qwen3", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
                          "num_attention_heads": 6, "num_key_value_heads": 4, "intermediate_size": 8})",
                      ErrorCode::invalid_file,
                      {"num_attention_heads 6 is not a multiple of num_key_value_heads 4"});
  expect_config_error(R"({"model_type": "qwen3", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
                          "num_attention_heads": 2, "intermediate_size": 8, "eos_token_id": [1, "x"]})",
                      ErrorCode::invalid_file, {"'eos_token_id'"});
  // A corrupt layer count must not make keel allocate billions of layers.
  expect_config_error(
      R"({"model_type": "qwen3", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2147483647,
                          "num_attention_heads": 2, "intermediate_size": 8})",
      ErrorCode::invalid_file, {"'num_hidden_layers'"});
  expect_config_error(R"({"vocab_size": 10})", ErrorCode::invalid_file, {"model_type"});
  expect_config_error(R"({"model_type": "qwen3", )", ErrorCode::invalid_file,
                      {"DIR/config.json", "invalid JSON"});
  expect_config_error(R"([1])", ErrorCode::invalid_file, {"not a JSON object"});
}

TEST(Config, UnknownModelTypeListsTheSupportedOnes) {
  std::vector<std::string> needles = {"\"mamba2\""};
  for (const models::ModelEntry& e : models::model_registry())
    for (std::string_view name : e.config.config_names) needles.emplace_back(name);
  // The five types of this build and their *_text spellings, at least.
  EXPECT_GE(needles.size(), 1u + 7u);
  expect_config_error(R"({"model_type": "mamba2"})", ErrorCode::unsupported, needles);
}

// Each registered spelling reaches a family reader (which asks for its first required size), not the
// unsupported-type path.
TEST(Config, EveryRegisteredNameHasAReader) {
  for (const models::ModelEntry& e : models::model_registry())
    for (std::string_view name : e.config.config_names) {
      SCOPED_TRACE(std::string(name));
      try {
        parse_model_config(R"({"model_type": ")" + std::string(name) + R"("})");
        ADD_FAILURE() << "an empty config was accepted";
      } catch (const Error& err) {
        EXPECT_EQ(err.code(), ErrorCode::invalid_file) << err.what();
        EXPECT_NE(std::string(err.what()).find("missing required field"), std::string::npos) << err.what();
      }
    }
}

TEST(Config, Qwen3_5NestedTextConfig) {
  // Shaped like a published Qwen3.5 folder: settings under text_config, tying at the top level.
  std::string text = R"({"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
    "tie_word_embeddings": true, "image_token_id": 248056,
    "vision_config": {"model_type": "qwen3_5", "depth": 12},
    "text_config": {"model_type": "qwen3_5_text", "vocab_size": 248320, "hidden_size": 1024,
      "num_hidden_layers": 8, "intermediate_size": 3584, "num_attention_heads": 8, "num_key_value_heads": 2,
      "head_dim": 256, "linear_num_key_heads": 16, "linear_num_value_heads": 16, "linear_key_head_dim": 128,
      "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
      "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention",
                      "linear_attention", "linear_attention", "linear_attention", "full_attention"],
      "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25,
                          "mrope_section": [11, 11, 10], "mrope_interleaved": true},
      "rms_norm_eps": 1e-06, "eos_token_id": 248044, "max_position_embeddings": 262144, "attn_output_gate": true}})";
  ModelConfig c = parse_model_config(text);
  EXPECT_EQ(c.model_type, "qwen3_5");
  EXPECT_EQ(c.config_model_type, "qwen3_5_text");
  EXPECT_TRUE(c.nested_text_config);
  EXPECT_TRUE(c.tie_word_embeddings);
  K D = K::gated_deltanet, A = K::attention;
  EXPECT_EQ(kinds(c), (std::vector<K>{D, D, D, A, D, D, D, A}));
  for (const LayerSpec& l : c.layers) EXPECT_EQ(l.ffn, K::mlp);
  EXPECT_EQ(c.count(K::mlp), 8);
  EXPECT_EQ(c.hidden_size, 1024);
  EXPECT_EQ(c.attention.head_dim, 256);
  EXPECT_TRUE(c.attention.qk_norm);
  EXPECT_TRUE(c.attention.output_gate);
  ASSERT_TRUE(c.attention.rope.has_value());
  EXPECT_DOUBLE_EQ(c.attention.rope->theta, 1e7);
  EXPECT_DOUBLE_EQ(c.attention.rope->partial_rotary_factor, 0.25);
  EXPECT_EQ(c.attention.rope->mrope_section, (std::vector<int64_t>{11, 11, 10}));
  EXPECT_TRUE(c.attention.rope->mrope_interleaved);
  EXPECT_EQ(c.gated_deltanet.num_value_heads, 16);
  EXPECT_EQ(c.gated_deltanet.conv_dim(), 2 * 16 * 128 + 16 * 128);
  EXPECT_EQ(c.mlp.intermediate_size, 3584);
  EXPECT_EQ(c.mlp.hidden_act, "silu");
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{248044});
  EXPECT_FALSE(c.bos_token_id.has_value());
}

TEST(Config, Qwen3_5TextFlatWithIntervalAndDefaults) {
  // A text-only folder (Qwen3_5ForCausalLM): flat settings, layers from full_attention_interval.
  std::string text =
      R"({"model_type": "qwen3_5_text", "vocab_size": 512, "hidden_size": 64, "num_hidden_layers": 6,
    "intermediate_size": 96, "num_attention_heads": 4, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
    "linear_key_head_dim": 16, "linear_value_head_dim": 8, "full_attention_interval": 3})";
  ModelConfig c = parse_model_config(text);
  EXPECT_EQ(c.model_type, "qwen3_5");
  EXPECT_FALSE(c.nested_text_config);
  K D = K::gated_deltanet, A = K::attention;
  EXPECT_EQ(kinds(c), (std::vector<K>{D, D, A, D, D, A}));
  // configuration_qwen3_5.py defaults: num_key_value_heads 4, head_dim 256, partial_rotary_factor 0.25,
  // rope theta 10000 (the mixin's default_theta), linear_conv_kernel_dim 4, rms_norm_eps 1e-6, max positions
  // 32768.
  EXPECT_EQ(c.attention.num_key_value_heads, 4);
  EXPECT_EQ(c.attention.head_dim, 256);
  EXPECT_DOUBLE_EQ(c.attention.rope->partial_rotary_factor, 0.25);
  EXPECT_DOUBLE_EQ(c.attention.rope->theta, 10000.0);
  EXPECT_EQ(c.gated_deltanet.conv_kernel, 4);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_EQ(c.max_position_embeddings, 32768);
  EXPECT_TRUE(c.eos_token_ids.empty());
  // The default interval is 4.
  std::string no_interval = R"({"model_type": "qwen3_5_text", "vocab_size": 512, "hidden_size": 64,
    "num_hidden_layers": 8, "intermediate_size": 96, "num_attention_heads": 4, "linear_num_key_heads": 2,
    "linear_num_value_heads": 4, "linear_key_head_dim": 16, "linear_value_head_dim": 8})";
  EXPECT_EQ(kinds(parse_model_config(no_interval)), (std::vector<K>{D, D, D, A, D, D, D, A}));
}

TEST(Config, Qwen3_5MoeNested) {
  std::string text = R"({"model_type": "qwen3_5_moe", "text_config": {"model_type": "qwen3_5_moe_text",
    "vocab_size": 248320, "hidden_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 16,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
    "num_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512}})";
  ModelConfig c = parse_model_config(text);
  EXPECT_EQ(c.model_type, "qwen3_5_moe");
  EXPECT_EQ(c.config_model_type, "qwen3_5_moe_text");
  for (const LayerSpec& l : c.layers) EXPECT_EQ(l.ffn, K::moe);
  EXPECT_EQ(c.count(K::moe), 4);
  EXPECT_EQ(c.attention.num_key_value_heads, 2);  // configuration_qwen3_5_moe.py default
  EXPECT_EQ(c.moe.num_experts, 256);
  EXPECT_EQ(c.moe.num_experts_per_tok, 8);
  EXPECT_EQ(c.moe.shared_expert_intermediate_size, 512);
  EXPECT_EQ(c.moe.n_shared_experts, 1);
  EXPECT_TRUE(c.moe.norm_topk_prob);
  EXPECT_EQ(c.mlp.intermediate_size, 0);  // no dense MLP
}

TEST(Config, Qwen3_5Errors) {
  std::string head =
      R"({"model_type": "qwen3_5_text", "vocab_size": 512, "hidden_size": 64, "intermediate_size": 96,
    "num_attention_heads": 4, "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16,
    "linear_value_head_dim": 8, )";
  expect_config_error(
      head + R"("num_hidden_layers": 3, "layer_types": ["linear_attention", "full_attention"]})",
      ErrorCode::invalid_file, {"layer_types has 2 entries but num_hidden_layers is 3"});
  expect_config_error(head + R"("layer_types": ["linear_attention", "sliding_attention"]})",
                      ErrorCode::invalid_file, {"layer_types[1]", "sliding_attention"});
  expect_config_error(R"({"model_type": "qwen3_5", "text_config": 3})", ErrorCode::invalid_file,
                      {"text_config"});
  expect_config_error(R"({"model_type": "qwen3_5", "text_config": {"vocab_size": 10, "hidden_size": 8,
                          "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 8}})",
                      ErrorCode::invalid_file,
                      {"text_config", "missing required field 'linear_num_key_heads'"});
}

TEST(Config, Qwen3) {
  // Shaped like Qwen3-0.6B's config.json.
  std::string text =
      R"({"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "attention_bias": false,
    "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
    "intermediate_size": 3072, "max_position_embeddings": 40960, "max_window_layers": 28, "num_attention_heads": 16,
    "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": null,
    "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true, "use_sliding_window": false,
    "vocab_size": 151936})";
  ModelConfig c = parse_model_config(text);
  EXPECT_EQ(c.model_type, "qwen3");
  EXPECT_EQ(c.num_layers(), 28);
  EXPECT_EQ(c.count(K::attention), 28);
  EXPECT_EQ(c.count(K::mlp), 28);
  EXPECT_EQ(c.attention.head_dim, 128);  // ≠ 1024 / 16 = 64
  EXPECT_EQ(c.attention.num_key_value_heads, 8);
  EXPECT_TRUE(c.attention.qk_norm);
  EXPECT_FALSE(c.attention.output_gate);
  EXPECT_DOUBLE_EQ(c.attention.rope->theta, 1e6);
  EXPECT_DOUBLE_EQ(c.attention.rope->partial_rotary_factor, 1.0);
  EXPECT_EQ(c.attention.rope->type, "default");
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, 151643);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{151645});
  EXPECT_EQ(c.mlp.intermediate_size, 3072);
  expect_config_error(R"({"model_type": "qwen3", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 30,
                          "num_attention_heads": 2, "intermediate_size": 8, "use_sliding_window": true})",
                      ErrorCode::unsupported, {"use_sliding_window"});
}

TEST(Config, LlamaWithLlama3RopeAndDerivedHeadDim) {
  // Shaped like Llama-3.2-1B-Instruct's config.json (no head_dim: derived as hidden / heads).
  std::string text =
      R"({"model_type": "llama", "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009],
    "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 8192, "max_position_embeddings": 131072,
    "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": true, "vocab_size": 128256})";
  ModelConfig c = parse_model_config(text);
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_EQ(c.attention.head_dim, 64);
  EXPECT_FALSE(c.attention.qk_norm);
  const RopeConfig& r = *c.attention.rope;
  EXPECT_EQ(r.type, "llama3");
  EXPECT_DOUBLE_EQ(r.theta, 500000.0);
  EXPECT_DOUBLE_EQ(*r.factor, 32.0);
  EXPECT_DOUBLE_EQ(*r.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(*r.high_freq_factor, 4.0);
  EXPECT_EQ(*r.original_max_position_embeddings, 8192);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  // configuration_llama.py defaults: kv heads = heads, bos 1, eos 2, 2048 positions, theta 10000.
  ModelConfig d = parse_model_config(R"({"model_type": "llama", "vocab_size": 100, "hidden_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128, "rope_parameters": {"type": "linear",
    "factor": 2.0}})");
  EXPECT_EQ(d.attention.num_key_value_heads, 4);
  EXPECT_EQ(d.attention.head_dim, 16);
  EXPECT_EQ(d.bos_token_id, 1);
  EXPECT_EQ(d.eos_token_ids, std::vector<int64_t>{2});
  EXPECT_EQ(d.max_position_embeddings, 2048);
  EXPECT_EQ(d.attention.rope->type, "linear");
  EXPECT_DOUBLE_EQ(d.attention.rope->theta, 10000.0);
  expect_config_error(R"({"model_type": "llama", "vocab_size": 100, "hidden_size": 66, "num_hidden_layers": 2,
                          "num_attention_heads": 4, "intermediate_size": 128})",
                      ErrorCode::invalid_file, {"hidden_size 66 is not a multiple of num_attention_heads 4"});
}

TEST(Config, InfinityInBothSpellingsReadsTheSame) {
  auto limit = [](const std::string& spelled) {
    std::string text =
        R"({"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 8, "hybrid_override_pattern":
      "M", "mamba_num_heads": 8, "mamba_head_dim": 4, "time_step_limit": )" +
        spelled + "}";
    return parse_model_config(text).mamba2.time_step_limit;
  };
  auto a = limit(R"([0.0, {"__float__": "Infinity"}])");
  auto b = limit("[0.0, Infinity]");
  auto c = limit("[0.0,Infinity]");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
  EXPECT_EQ(a.second, std::numeric_limits<double>::infinity());
  // -Infinity and NaN are read too, and then rejected by the range check with the field named.
  expect_config_error(
      R"({"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 8, "hybrid_override_pattern":
      "M", "mamba_num_heads": 8, "mamba_head_dim": 4, "time_step_limit": [-Infinity, NaN]})",
      ErrorCode::invalid_file, {"time_step_limit"});
}

TEST(JsonLenient, RewritesOnlyBareTokens) {
  nlohmann::json j = parse_json_lenient(
      R"({"a": "Infinity", "b": Infinity, "c": [-Infinity, NaN], "d": "say \"NaN\" Infinity", "NaNx": 1})",
      "t");
  EXPECT_EQ(j["a"], "Infinity");
  EXPECT_EQ(json_number(j["b"]), std::numeric_limits<double>::infinity());
  EXPECT_EQ(json_number(j["c"][0]), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(*json_number(j["c"][1])));
  EXPECT_EQ(j["d"], "say \"NaN\" Infinity");
  EXPECT_EQ(j["NaNx"], 1);
  EXPECT_THROW(parse_json_lenient("{\"a\": Infinityx}", "t"), Error);
  EXPECT_EQ(json_integer(nlohmann::json(3.0)), 3);
  EXPECT_FALSE(json_integer(nlohmann::json(3.5)).has_value());
  EXPECT_FALSE(json_integer(nlohmann::json(1e30)).has_value());
}

// MLX quantization blocks (mlx-lm mlx_lm/utils.py: "quantization" and its copy "quantization_config";
// per-module entries keyed by path, a dict or false; older mlx-lm also wrote true).
namespace {
std::string qwen3_with(const std::string& extra) {
  return R"({"model_type": "qwen3", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
             "num_attention_heads": 2, "num_key_value_heads": 2, "intermediate_size": 8, )" +
         extra + "}";
}
}  // namespace

TEST(Config, MlxQuantizationBlock) {
  ModelConfig plain = parse_model_config(qwen3_with(R"("head_dim": 4)"));
  EXPECT_FALSE(plain.quantization.has_value());
  ModelConfig c =
      parse_model_config(qwen3_with(R"("quantization": {"group_size": 64, "bits": 4, "mode": "affine",
      "model.layers.0.mlp.gate": {"group_size": 32, "bits": 8}, "model.layers.0.mlp.down_proj": false,
      "model.layers.0.mlp.up_proj": true, "model.layers.0.self_attn.q_proj": {"bits": 6}},
      "quantization_config": {"group_size": 64, "bits": 4})"));
  ASSERT_TRUE(c.quantization.has_value());
  const QuantizationConfig& q = *c.quantization;
  EXPECT_EQ(q.base.bits, 4);
  EXPECT_EQ(q.base.group_size, 64);
  const std::optional<QuantParams>* gate = q.find("model.layers.0.mlp.gate");
  ASSERT_TRUE(gate && gate->has_value());
  EXPECT_EQ((*gate)->bits, 8);
  EXPECT_EQ((*gate)->group_size, 32);
  const std::optional<QuantParams>* down = q.find("model.layers.0.mlp.down_proj");
  ASSERT_TRUE(down);
  EXPECT_FALSE(down->has_value());  // false: kept in float
  const std::optional<QuantParams>* up = q.find("model.layers.0.mlp.up_proj");
  ASSERT_TRUE(up && up->has_value());
  EXPECT_EQ((*up)->bits, 4);  // true: the defaults
  const std::optional<QuantParams>* qp = q.find("model.layers.0.self_attn.q_proj");
  ASSERT_TRUE(qp && qp->has_value());
  EXPECT_EQ((*qp)->bits, 6);
  EXPECT_EQ((*qp)->group_size, 64);  // the entry's missing field takes the default
  EXPECT_EQ(q.find("model.layers.0.self_attn.k_proj"), nullptr);
  // quantization_config alone (the hf-tree copy), mode absent: affine.
  ModelConfig copy =
      parse_model_config(qwen3_with(R"("quantization_config": {"group_size": 32, "bits": 3})"));
  ASSERT_TRUE(copy.quantization.has_value());
  EXPECT_EQ(copy.quantization->base.bits, 3);
  EXPECT_EQ(copy.quantization->base.group_size, 32);
  // Renaming entries with the tensors (Qwen3.5's language_model.model. → model.).
  QuantizationConfig r = q;
  r.rename_prefix("model.layers.0.", "model.layers.9.");
  EXPECT_NE(r.find("model.layers.9.mlp.gate"), nullptr);
  EXPECT_EQ(r.find("model.layers.0.mlp.gate"), nullptr);
  // An entry naming the prefix's module itself (mlx-lm's recipes write "language_model.lm_head").
  QuantizationConfig h;
  h.modules = {{"language_model.lm_head", QuantParams{6, 64}},
               {"language_model.lm_headx", QuantParams{3, 64}}};
  h.rename_prefix("language_model.lm_head.", "lm_head.");
  ASSERT_NE(h.find("lm_head"), nullptr);
  EXPECT_EQ((*h.find("lm_head"))->bits, 6);
  EXPECT_NE(h.find("language_model.lm_headx"), nullptr);  // a path that only starts with the name is not it
}

TEST(Config, MlxQuantizationErrorsNameTheModeOrField) {
  for (const char* mode : {"mxfp4", "mxfp8", "nvfp4"})
    expect_config_error(
        qwen3_with(fmt::format(R"("quantization": {{"group_size": 32, "bits": 4, "mode": "{}"}})", mode)),
        ErrorCode::unsupported, {"quantization.mode", mode, "affine"});
  expect_config_error(qwen3_with(R"("quantization": {"group_size": 64, "bits": 7})"), ErrorCode::invalid_file,
                      {"quantization.bits", "7", "2, 3, 4, 5, 6, 8"});
  expect_config_error(qwen3_with(R"("quantization": {"group_size": 48, "bits": 4})"), ErrorCode::invalid_file,
                      {"quantization.group_size", "48"});
  expect_config_error(qwen3_with(R"("quantization": {"bits": 4})"), ErrorCode::invalid_file,
                      {"quantization", "group_size", "missing"});
  expect_config_error(qwen3_with(R"("quantization": {"group_size": 64, "bits": 4, "model.embed_tokens": 3})"),
                      ErrorCode::invalid_file, {"model.embed_tokens", "false"});
  expect_config_error(qwen3_with(R"("quantization": {"group_size": 64, "bits": 4,
                                                      "model.embed_tokens": {"bits": 9}})"),
                      ErrorCode::invalid_file, {"model.embed_tokens", "bits", "9"});
  expect_config_error(qwen3_with(R"("quantization_config": {"quant_method": "fp8", "fmt": "e4m3"})"),
                      ErrorCode::unsupported, {"quant_method", "fp8"});
}
