// config.json → one typed ModelConfig that every model consumes.
//
// Each family's reader lives in its model file (src/models/<type>.cpp); this module has the types, the
// dispatch on "model_type" and the shared field reads (config_fields.h). Field names and defaults follow
// transformers 5.x (configuration_nemotron_h.py, configuration_qwen3_5.py,
// configuration_qwen3_5_moe.py, configuration_qwen3.py, configuration_llama.py), including their
// backward-compatible spellings (nemotron_h's mamba_d_conv, mamba_n_groups, ...; rope_scaling and top-level
// rope_theta). The sizes that decide tensor shapes (hidden_size, vocab_size, head counts, layer counts, the
// sizes of each layer kind present) are required: a folder without them is broken, and a silent default would
// only surface later as a weight-shape mismatch. Every other field takes transformers' default.
#pragma once
#include <cstdint>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dtype.h"

namespace keel {

enum class LayerKind : uint8_t { mamba2, attention, mlp, moe, gated_deltanet };
std::string_view layer_kind_name(LayerKind kind);  // "mamba2", "attention", "mlp", "moe", "gated_deltanet"

// One decoder layer. nemotron_h blocks have one kind each (M, *, -, E) and no ffn; the other families pair a
// token mixer (attention or gated_deltanet) with an ffn (mlp or moe) in the same layer.
struct LayerSpec {
  LayerKind kind = LayerKind::attention;
  std::optional<LayerKind> ffn;
};

struct RopeConfig {
  std::string type = "default";  // rope_parameters.rope_type: default, linear, dynamic, yarn, llama3, ...
  double theta = 10000.0;        // rope_theta
  double partial_rotary_factor = 1.0;  // fraction of head_dim that is rotated (qwen3_5: 0.25)
  std::optional<double> factor;
  std::optional<int64_t> original_max_position_embeddings;
  std::optional<double> low_freq_factor, high_freq_factor;       // llama3
  std::optional<double> attention_factor, beta_fast, beta_slow;  // yarn
  std::vector<int64_t>
      mrope_section;  // qwen3_5 (multimodal RoPE; for text all sections see the same position)
  bool mrope_interleaved = false;
};

struct AttentionConfig {
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // defaults to num_attention_heads
  int64_t head_dim = 0;         // the config's value, not hidden/heads (llama alone derives it when absent)
  bool attention_bias = false;  // q/k/v/o projections have biases
  bool qk_norm = false;         // per-head RMSNorm of q and k (qwen3, qwen3_5)
  bool output_gate = false;  // qwen3_5: q_proj yields [heads, 2·head_dim] = query ‖ sigmoid gate per head
  std::optional<RopeConfig> rope;  // nullopt: no positional encoding (nemotron_h)
};

// Mamba2 mixer (nemotron_h "M"). Shapes in ../shared/specs/numerics.md: H heads × P head_dim, G groups, N
// state.
struct Mamba2Config {
  int64_t num_heads = 0;         // H, mamba_num_heads
  int64_t head_dim = 0;          // P, mamba_head_dim
  int64_t n_groups = 8;          // G (alias mamba_n_groups)
  int64_t ssm_state_size = 128;  // N
  int64_t conv_kernel = 4;       // K (alias mamba_d_conv)
  int64_t chunk_size = 128;      // Q (alias mamba_chunk_size)
  int64_t expand = 2;
  double time_step_min = 0.001, time_step_max = 0.1, time_step_floor = 1e-4;  // init-time values
  std::pair<double, double> time_step_limit{0.0, std::numeric_limits<double>::infinity()};  // dt clamp
  bool use_conv_bias = true;        // alias mamba_conv_bias
  bool use_bias = false;            // in_proj / out_proj bias (transformers reads use_bias for both)
  std::string hidden_act = "silu";  // mamba_hidden_act
  bool norm_before_gate = false;    // nemotron_h: gate, then norm
  int64_t intermediate() const { return num_heads * head_dim; }                        // I = H·P
  int64_t conv_dim() const { return intermediate() + 2 * n_groups * ssm_state_size; }  // I + 2·G·N
};

// Gated DeltaNet (qwen3_5 "linear_attention").
struct GatedDeltaNetConfig {
  int64_t num_key_heads = 0;    // Hk, linear_num_key_heads
  int64_t num_value_heads = 0;  // Hv, linear_num_value_heads
  int64_t key_head_dim = 0;     // Dk, linear_key_head_dim
  int64_t value_head_dim = 0;   // Dv, linear_value_head_dim
  int64_t conv_kernel = 4;      // K, linear_conv_kernel_dim
  int64_t key_dim() const { return num_key_heads * key_head_dim; }
  int64_t value_dim() const { return num_value_heads * value_head_dim; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }  // q ‖ k ‖ v channels of the conv
};

struct MlpConfig {
  int64_t intermediate_size = 0;
  std::string hidden_act = "silu";  // nemotron_h: mlp_hidden_act ("relu2", no gate projection)
  bool bias = false;                // mlp_bias
};

struct MoeConfig {
  int64_t num_experts = 0;  // n_routed_experts (nemotron_h, alias num_local_experts) / num_experts
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  int64_t shared_expert_intermediate_size = 0;  // nemotron_h: moe_shared_expert_intermediate_size; 0: none
  int64_t n_shared_experts = 0;                 // nemotron_h
  int64_t n_group = 1, topk_group = 1;          // group-limited routing (nemotron_h)
  bool norm_topk_prob = true;                   // qwen3_5_moe always renormalizes over the chosen k
  double routed_scaling_factor = 1.0;
  std::optional<int64_t> latent_size;  // nemotron_h moe_latent_size: experts run in this width
  std::string hidden_act = "silu";
};

// MLX affine quantization (config.json "quantization", or its copy "quantization_config"; mlx-lm
// mlx_lm/utils.py): the default bits and group size, and per-module entries keyed by module path (the
// tensor name without ".weight"): that module's own parameters, or nullopt for `false` (kept in float). A
// module is quantized exactly when its `.scales` tensor exists or an entry names it with parameters.
struct QuantParams {
  int32_t bits = 0, group_size = 0;
};
struct QuantizationConfig {
  QuantParams base;
  // keel's own (random weights at a width: bench --random-weights --quantize): every matrix whose input
  // splits into groups is packed, its .scales asked for before its words. Never set from a file.
  bool every_matrix = false;
  std::vector<std::pair<std::string, std::optional<QuantParams>>> modules;  // sorted by path
  // The entry for `module`: nullptr when none; else its value (nullopt: `false`).
  const std::optional<QuantParams>* find(std::string_view module) const;
  // Renames entries whose path starts with `from` (as WeightStore::rename_prefix renames the tensors), and,
  // when both end in '.', the entry that is `from` without its dot (the module itself: `x.lm_head`).
  void rename_prefix(std::string_view from, std::string_view to);
};

struct ModelConfig {
  std::string model_type;           // canonical: nemotron_h, qwen3_5, qwen3_5_moe, qwen3, llama
  std::string config_model_type;    // as written (qwen3_5_text, ...); for nested folders, text_config's
  bool nested_text_config = false;  // settings came from "text_config" (published multimodal Qwen3.5 folders)
  int64_t hidden_size = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;  // nemotron_h: layer_norm_epsilon
  bool tie_word_embeddings = false;
  std::optional<int64_t> bos_token_id, pad_token_id;
  std::vector<int64_t> eos_token_ids;  // eos_token_id: one id or a list

  std::vector<LayerSpec> layers;  // one per decoder layer
  AttentionConfig attention;      // meaningful when an attention layer exists; likewise below
  Mamba2Config mamba2;
  GatedDeltaNetConfig gated_deltanet;
  MlpConfig mlp;
  MoeConfig moe;
  std::optional<QuantizationConfig> quantization;  // MLX-quantized folders
  // Not from config.json: the KV cache's element type this run asked for (--cache-type; f32 or f16).
  DType kv_cache_dtype = DType::f32;

  int64_t num_layers() const { return static_cast<int64_t>(layers.size()); }
  // Layers whose kind or ffn is `kind`.
  int64_t count(LayerKind kind) const;
  bool has(LayerKind kind) const { return count(kind) > 0; }
};

namespace config_detail {
class ConfigFields;
}

// How one model family reads config.json. The families live with their models (src/models/<type>.cpp, listed
// by models/registry.cpp); load/ holds only the generic parts: JSON, the typed field reads
// (config_fields.h) and the dispatch on "model_type" below.
struct ConfigReader {
  std::string_view model_type;                 // canonical, ModelConfig::model_type ("qwen3_5")
  std::vector<std::string_view> config_names;  // "model_type" values it reads ("qwen3_5", "qwen3_5_text")
  // Fills `cfg` from the file's top-level object; cfg.model_type and cfg.config_model_type are set before the
  // call. Error(invalid_file) naming the field, or Error(unsupported), for what it cannot read.
  void (*read)(const config_detail::ConfigFields& top, ModelConfig& cfg) = nullptr;
};

// The "quantization" object (else "quantization_config" when it is MLX's: no "quant_method"), or nullopt for
// neither. Error(unsupported) naming the mode for modes other than affine (mxfp4, mxfp8, nvfp4) and naming
// the quant_method of other quantizers' quantization_config; Error(invalid_file) naming the field for bits
// outside 2, 3, 4, 5, 6, 8, group sizes outside 32, 64, 128 or entries that are neither an object nor false.
std::optional<QuantizationConfig> parse_quantization(const nlohmann::json& root, std::string_view source);

// Parses config.json text with the reader whose config_names hold its "model_type". `source` names it in
// errors ("DIR/config.json"). Error(invalid_file) for malformed or inconsistent content, naming the field;
// Error(unsupported) for a model_type no reader names, naming it and every name the readers read.
// (models/registry.h has the forms that pass every registered model type's reader.)
ModelConfig parse_model_config(std::string_view json_text, std::string_view source,
                               std::span<const ConfigReader> readers);
// Reads DIR/config.json.
ModelConfig load_model_config(const std::string& folder, std::span<const ConfigReader> readers);

}  // namespace keel
