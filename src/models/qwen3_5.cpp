// qwen3_5 and qwen3_5_moe text models (transformers models/qwen3_5/modeling_qwen3_5.py,
// models/qwen3_5_moe/modeling_qwen3_5_moe.py). Every layer, under model.layers.N., is
//   hidden += mixer(rms_norm(hidden) · (1 + w))   input_layernorm, then linear_attn.* or self_attn.*
//   hidden += ffn(rms_norm(hidden) · (1 + w))     post_attention_layernorm, then mlp.*
// with the mixer a Gated DeltaNet (linear_attention, blocks/gated_deltanet) or gated full attention
// (full_attention: q/k RMSNorm × (1 + w) per head, partial RoPE on the first head_dim · partial_rotary_factor
// values in rotate_half layout — text M-RoPE gives every section the same position, so it is plain RoPE —,
// GQA, output × sigmoid(gate) with query ‖ gate per head from q_proj). The ffn is a SwiGLU MLP (qwen3_5) or a
// MoE (qwen3_5_moe: softmax router, top-k renormalized, SwiGLU experts, shared expert scaled by
// sigmoid(shared_expert_gate)). Every decoder RMSNorm (input, post-attention, final, q/k) multiplies by 1 + w
// (zero-initialized weights); the DeltaNet output norm by w. Published folders (…ForConditionalGeneration)
// hold the text model under model.language_model.* beside a vision tower (model.visual.*) keel does not run.
// MLX folders (mlx-lm's qwen3_5.py / qwen3_5_moe.py): language_model.model.* and language_model.lm_head.*,
// conv1d [C, K, 1], decoder norms stored as 1 + w (scaled by as stored), experts stacked as
// mlp.switch_mlp.{gate,up,down}_proj [E, ·, ·], routers and shared-expert gates often 8-bit entries.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <optional>
#include <string>
#include <utility>

#include "core/error.h"
#include "models/blocks/attention.h"
#include "models/blocks/gated_deltanet.h"
#include "models/blocks/mlp.h"
#include "models/blocks/moe.h"
#include "models/registry.h"
#include "models/transformer.h"

namespace keel::models {

namespace {

// mlx-lm's layout (mlx_lm/models/qwen3_5.py `sanitize`): conv1d weights moved to [C, K, 1], and the decoder
// RMSNorm weights (input_layernorm, post_attention_layernorm, model.norm, q_norm, k_norm; not the DeltaNet's
// linear_attn.norm) stored as 1 + w, exactly when the conv1d weights were moved — mlx-lm's own test
// (`has_unsanitized_conv1d`). A folder without conv1d weights is MLX's when its names start with
// language_model.
bool stores_mlx_layout(const WeightStore& store) {
  bool any_conv = false;
  for (const std::string& n : store.names()) {
    if (n.find("conv1d.weight") == std::string::npos) continue;
    const Tensor t = store.mapped(n);  // the shape only: a device placement waits for the renames below
    if (t.ndim() == 3 && t.dim(-1) != 1) return false;
    any_conv = true;
  }
  return any_conv || store.has("language_model.model.embed_tokens.weight");
}

// MLX names → the Hugging Face ones keel binds, in the store and in the quantization entries alike:
// language_model.model.* → model.*, language_model.lm_head.* → lm_head.*.
void use_mlx_names(WeightStore& store, std::optional<QuantizationConfig>& quant) {
  for (auto [from, to] :
       {std::pair{"language_model.model.", "model."}, {"language_model.lm_head.", "lm_head."}}) {
    store.rename_prefix(from, to);
    if (quant) quant->rename_prefix(from, to);
  }
}

// model.language_model.* → model.*; says once that the vision tower stays unused.
void use_language_model_weights(const ModelConfig& cfg, WeightStore& store,
                                std::optional<QuantizationConfig>& quant) {
  if (!store.has("model.language_model.embed_tokens.weight")) return;
  store.rename_prefix("model.language_model.", "model.");
  if (quant) quant->rename_prefix("model.language_model.", "model.");
  int64_t vision = 0;
  for (const std::string& n : store.names()) vision += n.rfind("model.visual.", 0) == 0;
  spdlog::info("{}: serving the text model of a multimodal folder; ignoring its vision tower ({} tensors)",
               cfg.model_type, vision);
}

// Qwen3_5MoeSparseMoeBlock: gate [E, d]; experts per expert (experts.N.{gate,up,down}_proj.weight) or fused
// (experts.gate_up_proj [E, 2I, d]: gate rows then up rows; experts.down_proj [E, d, I]); shared_expert.* and
// shared_expert_gate [1, d].
std::unique_ptr<Block> moe_block(const ModelConfig& cfg, const WeightBinder& w) {
  const MoeConfig& c = cfg.moe;
  const int64_t d = cfg.hidden_size, E = c.num_experts, I = c.moe_intermediate_size;
  const int64_t Is = c.shared_expert_intermediate_size;
  if (activation_from_name(c.hidden_act, "hidden_act") != ops::Activation::silu)
    throw_error(ErrorCode::unsupported, "{}: MoE experts with hidden_act \"{}\" (only silu)", cfg.model_type,
                c.hidden_act);
  ops::MoeWeights mw;
  mw.router = w.matrix("gate", E, d);
  const bool fused = w.has("experts.gate_up_proj"), mlx = w.has("switch_mlp.gate_proj.weight");
  Tensor gate_up = fused ? w.get("experts.gate_up_proj", {E, 2 * I, d}) : Tensor();
  Tensor down = fused ? w.get("experts.down_proj", {E, d, I}) : Tensor();
  Weight gate3, up3, down3;  // mlx-lm's SwitchGLU stacks, dense or packed
  if (mlx) {
    gate3 = w.stacked("switch_mlp.gate_proj", E, I, d);
    up3 = w.stacked("switch_mlp.up_proj", E, I, d);
    down3 = w.stacked("switch_mlp.down_proj", E, d, I);
  }
  for (int64_t e = 0; e < E; ++e) {
    const WeightBinder x = w.sub(fmt::format("experts.{}.", e));
    if (mlx) {
      mw.gate.push_back(gate3.select(e)), mw.up.push_back(up3.select(e)), mw.down.push_back(down3.select(e));
      continue;
    }
    mw.gate.push_back(fused ? Weight(gate_up.select(e).slice(0, 0, I)) : x.matrix("gate_proj", I, d));
    mw.up.push_back(fused ? Weight(gate_up.select(e).slice(0, I, I)) : x.matrix("up_proj", I, d));
    mw.down.push_back(fused ? Weight(down.select(e)) : x.matrix("down_proj", d, I));
  }
  mw.shared_gate = w.matrix("shared_expert.gate_proj", Is, d);
  mw.shared_up = w.matrix("shared_expert.up_proj", Is, d);
  mw.shared_down = w.matrix("shared_expert.down_proj", d, Is);
  mw.shared_expert_gate = w.matrix("shared_expert_gate", 1, d);
  ops::MoeParams p;
  p.router = ops::MoeRouter::softmax_topk;
  p.activation = ops::MoeActivation::swiglu;
  p.top_k = c.num_experts_per_tok;
  return std::make_unique<MoeBlock>(std::move(mw), p);
}

std::unique_ptr<Model> make_qwen3_5_family(const ModelConfig& cfg, WeightStore& store, Backend& be) {
  const bool mlx = stores_mlx_layout(store);
  std::optional<QuantizationConfig> quant = cfg.quantization;  // renamed with the tensors
  use_mlx_names(store, quant);
  use_language_model_weights(cfg, store, quant);
  WeightBinder root(store, be, {}, quant ? &*quant : nullptr);
  DecoderSpec spec;
  bind_embeddings(cfg, root, spec, "model.embed_tokens.weight", "model.norm.weight");
  // The stored 1 + w of MLX files is the scale itself; keel must not add 1 again.
  const ops::NormScale decoder_norm = mlx ? ops::NormScale::weight : ops::NormScale::one_plus_weight;
  spec.norm.scale = decoder_norm;
  const int64_t d = cfg.hidden_size;
  const AttentionConfig& a = cfg.attention;
  AttentionSpec as;
  if (cfg.has(LayerKind::attention)) {
    if (!a.rope)
      throw_error(ErrorCode::invalid_file, "{}: full attention without RoPE settings", cfg.model_type);
    spec.rope.emplace(*a.rope, a.head_dim);  // rotary_dim = head_dim · partial_rotary_factor
    as.hidden = d;
    as.n_q = a.num_attention_heads;
    as.n_kv = a.num_key_value_heads;
    as.head_dim = a.head_dim;
    as.bias = a.attention_bias;
    as.qk_norm = true;
    as.kv_dtype = cfg.kv_cache_dtype;
    as.qk_norm_scale = decoder_norm;
    as.norm_eps = spec.norm.eps;
    as.rope = true;
    as.output_gate = a.output_gate;
  }
  const ops::Activation act = activation_from_name(cfg.mlp.hidden_act, "hidden_act");

  std::vector<DecoderLayer> layers;
  for (int64_t i = 0; i < cfg.num_layers(); ++i) {
    const LayerSpec& ls = cfg.layers[static_cast<size_t>(i)];
    const WeightBinder w = root.sub(fmt::format("model.layers.{}.", i));
    std::unique_ptr<Block> mixer;
    if (ls.kind == LayerKind::gated_deltanet)
      mixer = std::make_unique<GatedDeltaNetBlock>(
          cfg.gated_deltanet, spec.norm.eps,
          bind_gated_deltanet(w.sub("linear_attn."), cfg.gated_deltanet, d));
    else if (ls.kind == LayerKind::attention)
      mixer = std::make_unique<AttentionBlock>(as, bind_attention(w.sub("self_attn."), as));
    else
      throw_error(ErrorCode::unsupported, "{}: layer {} is {}", cfg.model_type, i, layer_kind_name(ls.kind));
    std::unique_ptr<Block> ffn;
    if (ls.ffn == LayerKind::moe)
      ffn = moe_block(cfg, w.sub("mlp."));
    else
      ffn =
          std::make_unique<MlpBlock>(bind_mlp(w.sub("mlp."), d, cfg.mlp.intermediate_size, true, false), act);
    DecoderLayer layer;
    layer.parts.push_back({w.vec("input_layernorm.weight", d), std::move(mixer)});
    layer.parts.push_back({w.vec("post_attention_layernorm.weight", d), std::move(ffn)});
    layers.push_back(std::move(layer));
  }
  return std::make_unique<DecoderModel>(be, std::move(spec), std::move(layers));
}

}  // namespace

std::unique_ptr<Model> make_qwen3_5(const ModelConfig& cfg, WeightStore& store, Backend& be) {
  return make_qwen3_5_family(cfg, store, be);
}

std::unique_ptr<Model> make_qwen3_5_moe(const ModelConfig& cfg, WeightStore& store, Backend& be) {
  return make_qwen3_5_family(cfg, store, be);
}

// ---- config.json (transformers Qwen3_5TextConfig / Qwen3_5MoeTextConfig, flat or nested) ----

namespace {

using config_detail::ConfigFields;

// The text settings `f`, flat or nested under text_config; `top` the file's top-level object.
void read_text_settings(const ConfigFields& f, const ConfigFields& top, bool moe, ModelConfig& cfg) {
  config_detail::read_common(f, config_detail::CommonDefaults{}, cfg);
  // Nested folders may carry tying and token ids at the top level instead of (or as well as) in text_config.
  if (cfg.nested_text_config) {
    if (!f.has("tie_word_embeddings")) cfg.tie_word_embeddings = top.flag("tie_word_embeddings", false);
    if (!f.has("bos_token_id")) cfg.bos_token_id = top.optional_token_id("bos_token_id");
    if (!f.has("pad_token_id")) cfg.pad_token_id = top.optional_token_id("pad_token_id");
    if (!f.has("eos_token_id")) cfg.eos_token_ids = top.token_ids("eos_token_id", {});
  }
  LayerKind ffn = moe ? LayerKind::moe : LayerKind::mlp;
  if (f.has("layer_types")) {
    std::vector<std::string> words = config_detail::string_list(f, "layer_types");
    for (size_t i = 0; i < words.size(); ++i) {
      const std::string& w = words[i];
      if (w == "linear_attention" || w == "linear")
        cfg.layers.push_back({LayerKind::gated_deltanet, ffn});
      else if (w == "full_attention" || w == "attention" || w == "full")
        cfg.layers.push_back({LayerKind::attention, ffn});
      else
        f.fail("layer_types[{}] is \"{}\"; expected linear_attention or full_attention", i,
               clip_for_message(w, 40));
    }
    config_detail::check_layer_count(f, "layer_types", cfg.layers.size());
  } else {
    // transformers: every full_attention_interval-th layer (1-based) is full attention, the rest linear.
    int64_t n = f.layer_count();
    int64_t interval = f.size("full_attention_interval", 4);
    for (int64_t i = 0; i < n; ++i)
      cfg.layers.push_back({(i + 1) % interval ? LayerKind::gated_deltanet : LayerKind::attention, ffn});
  }

  if (cfg.has(LayerKind::attention)) {
    config_detail::read_attention(f, moe ? 2 : 4, "head_dim", 256, cfg.attention);
    cfg.attention.qk_norm = true;
    cfg.attention.output_gate = f.flag("attn_output_gate", true);
    cfg.attention.rope = config_detail::read_rope(f, 0.25);
  }
  if (cfg.has(LayerKind::gated_deltanet)) {
    GatedDeltaNetConfig& g = cfg.gated_deltanet;
    g.num_key_heads = f.size("linear_num_key_heads");
    g.num_value_heads = f.size("linear_num_value_heads");
    g.key_head_dim = f.size("linear_key_head_dim");
    g.value_head_dim = f.size("linear_value_head_dim");
    g.conv_kernel = f.size("linear_conv_kernel_dim", 4);
    if (g.num_value_heads % g.num_key_heads != 0)
      f.fail("linear_num_value_heads {} is not a multiple of linear_num_key_heads {}", g.num_value_heads,
             g.num_key_heads);
  }
  cfg.mlp.hidden_act = f.text("hidden_act", "silu");
  if (!moe) {
    cfg.mlp.intermediate_size = f.size("intermediate_size");
    return;
  }
  MoeConfig& e = cfg.moe;
  e.num_experts = f.size("num_experts");
  e.num_experts_per_tok = f.size("num_experts_per_tok");
  e.moe_intermediate_size = f.size("moe_intermediate_size");
  e.shared_expert_intermediate_size = f.size("shared_expert_intermediate_size", 512);
  e.n_shared_experts = 1;  // one shared expert, scaled by sigmoid(shared_expert_gate(x))
  e.norm_topk_prob = f.flag("norm_topk_prob", true);
  e.hidden_act = cfg.mlp.hidden_act;
  if (e.num_experts_per_tok > e.num_experts)
    f.fail("num_experts_per_tok {} exceeds num_experts {}", e.num_experts_per_tok, e.num_experts);
}

// Published folders (…ForConditionalGeneration, model_type qwen3_5 / qwen3_5_moe) nest the text model's
// settings under "text_config"; the *_text spellings are flat.
void read_qwen3_5_config(const ConfigFields& top, ModelConfig& cfg) {
  const bool moe = cfg.model_type == "qwen3_5_moe";
  const nlohmann::json* tc = cfg.config_model_type.ends_with("_text") ? nullptr : top.find("text_config");
  if (!tc) {
    read_text_settings(top, top, moe, cfg);
    return;
  }
  if (!tc->is_object()) top.fail("\"text_config\" is not an object");
  cfg.nested_text_config = true;
  if (tc->contains("model_type") && (*tc)["model_type"].is_string())
    cfg.config_model_type = (*tc)["model_type"].get<std::string>();
  read_text_settings(ConfigFields(*tc, top.context() + ": text_config"), top, moe, cfg);
}

}  // namespace

ModelEntry qwen3_5_model_entry() {
  return {{"qwen3_5", {"qwen3_5", "qwen3_5_text"}, &read_qwen3_5_config}, &make_qwen3_5};
}

ModelEntry qwen3_5_moe_model_entry() {
  return {{"qwen3_5_moe", {"qwen3_5_moe", "qwen3_5_moe_text"}, &read_qwen3_5_config}, &make_qwen3_5_moe};
}

}  // namespace keel::models
