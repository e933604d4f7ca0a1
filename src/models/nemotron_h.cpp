// nemotron_h (transformers models/nemotron_h/modeling_nemotron_h.py). Every block is
//   hidden += mixer(rms_norm(hidden) · w)     backbone.layers.N.{norm, mixer.*}
// with one mixer per layer kind: M Mamba2 (blocks/mamba2), * attention without positional encoding, - MLP
// down(relu²(up(x))), E MoE (sigmoid router + e_score_correction_bias for the choice only, group-limited
// top-k, unbiased weights normalized × routed_scaling_factor; relu² experts plus a shared expert). Embeddings
// backbone.embeddings, final norm backbone.norm_f, lm_head (or tied).
#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "models/blocks/attention.h"
#include "models/blocks/mamba2.h"
#include "models/blocks/mlp.h"
#include "models/blocks/moe.h"
#include "models/registry.h"
#include "models/transformer.h"

namespace keel::models {

namespace {

std::unique_ptr<Block> moe_block(const ModelConfig& cfg, const WeightBinder& w) {
  const MoeConfig& c = cfg.moe;
  const int64_t d = cfg.hidden_size, E = c.num_experts, I = c.moe_intermediate_size;
  if (c.latent_size) throw_error(ErrorCode::unsupported, "nemotron_h: moe_latent_size is not supported yet");
  if (activation_from_name(cfg.mlp.hidden_act, "mlp_hidden_act") != ops::Activation::relu2)
    throw_error(ErrorCode::unsupported, "nemotron_h: MoE experts with mlp_hidden_act \"{}\" (only relu2)",
                cfg.mlp.hidden_act);
  ops::MoeWeights mw;
  mw.router = w.matrix("gate", E, d);
  mw.router_bias = w.get("gate.e_score_correction_bias", {E});
  // Experts as published (experts.N.up_proj.weight), fused 3-D (experts.up_proj [E, I, d]), or stacked as
  // mlx-lm saves them (switch_mlp.fc1 [E, I, d] from up_proj, switch_mlp.fc2 [E, d, I] from down_proj; dense
  // or packed).
  const bool fused = w.has("experts.up_proj"), mlx = w.has("switch_mlp.fc1.weight");
  Weight up3 = fused ? Weight(w.get("experts.up_proj", {E, I, d}))
               : mlx ? w.stacked("switch_mlp.fc1", E, I, d)
                     : Weight();
  Weight down3 = fused ? Weight(w.get("experts.down_proj", {E, d, I}))
                 : mlx ? w.stacked("switch_mlp.fc2", E, d, I)
                       : Weight();
  for (int64_t e = 0; e < E; ++e) {
    mw.up.push_back(up3.defined() ? up3.select(e) : w.matrix(fmt::format("experts.{}.up_proj", e), I, d));
    mw.down.push_back(down3.defined() ? down3.select(e)
                                      : w.matrix(fmt::format("experts.{}.down_proj", e), d, I));
  }
  if (c.n_shared_experts > 0) {
    const int64_t Is = c.shared_expert_intermediate_size;
    mw.shared_up = w.matrix("shared_experts.up_proj", Is, d);
    mw.shared_down = w.matrix("shared_experts.down_proj", d, Is);
  }
  ops::MoeParams p;
  p.router = ops::MoeRouter::sigmoid_grouped;
  p.activation = ops::MoeActivation::relu2;
  p.top_k = c.num_experts_per_tok;
  p.n_group = c.n_group;
  p.topk_group = c.topk_group;
  p.norm_topk_prob = c.norm_topk_prob;
  p.routed_scaling_factor = static_cast<float>(c.routed_scaling_factor);
  return std::make_unique<MoeBlock>(std::move(mw), p);
}

}  // namespace

std::unique_ptr<Model> make_nemotron_h(const ModelConfig& cfg, WeightStore& store, Backend& be) {
  WeightBinder root(store, be, {}, cfg.quantization ? &*cfg.quantization : nullptr);
  DecoderSpec spec;
  bind_embeddings(cfg, root, spec, "backbone.embeddings.weight", "backbone.norm_f.weight");
  const int64_t d = cfg.hidden_size;
  AttentionSpec as;
  as.hidden = d;
  as.n_q = cfg.attention.num_attention_heads;
  as.n_kv = cfg.attention.num_key_value_heads;
  as.head_dim = cfg.attention.head_dim;
  as.bias = cfg.attention.attention_bias;
  as.kv_dtype = cfg.kv_cache_dtype;

  std::vector<DecoderLayer> layers;
  for (int64_t i = 0; i < cfg.num_layers(); ++i) {
    const WeightBinder w = root.sub(fmt::format("backbone.layers.{}.", i));
    const WeightBinder mixer = w.sub("mixer.");
    std::unique_ptr<Block> block;
    switch (cfg.layers[static_cast<size_t>(i)].kind) {
      case LayerKind::mamba2:
        block = std::make_unique<Mamba2Block>(cfg.mamba2, spec.norm.eps, bind_mamba2(mixer, cfg.mamba2, d));
        break;
      case LayerKind::attention:
        block = std::make_unique<AttentionBlock>(as, bind_attention(mixer, as));
        break;
      case LayerKind::mlp:
        block = std::make_unique<MlpBlock>(bind_mlp(mixer, d, cfg.mlp.intermediate_size, false, cfg.mlp.bias),
                                           activation_from_name(cfg.mlp.hidden_act, "mlp_hidden_act"));
        break;
      case LayerKind::moe:
        block = moe_block(cfg, mixer);
        break;
      default:
        throw_error(ErrorCode::unsupported, "nemotron_h: layer {} is {}", i,
                    layer_kind_name(cfg.layers[static_cast<size_t>(i)].kind));
    }
    DecoderLayer layer;
    layer.parts.push_back({w.vec("norm.weight", d), std::move(block)});
    layers.push_back(std::move(layer));
  }
  return std::make_unique<DecoderModel>(be, std::move(spec), std::move(layers));
}

// ---- config.json (transformers NemotronHConfig) ----

namespace {

using config_detail::ConfigFields;

std::optional<LayerKind> nemotron_word(std::string_view w) {
  // transformers 5.x: linear_attention = Mamba2, full_attention; older files: mamba, attention.
  if (w == "mamba" || w == "linear_attention") return LayerKind::mamba2;
  if (w == "attention" || w == "full_attention") return LayerKind::attention;
  if (w == "mlp") return LayerKind::mlp;
  if (w == "moe") return LayerKind::moe;
  return std::nullopt;
}

std::optional<LayerKind> nemotron_char(char c) {
  switch (c) {
    case 'M':
      return LayerKind::mamba2;
    case '*':
      return LayerKind::attention;
    case '-':
      return LayerKind::mlp;
    case 'E':
      return LayerKind::moe;
    default:
      return std::nullopt;
  }
}

std::vector<LayerKind> nemotron_layers(const ConfigFields& f) {
  std::optional<std::vector<LayerKind>> from_list, from_pattern;
  std::string_view list_key = f.pick({"layers_block_type", "layer_types"});
  if (f.has(list_key)) {
    std::vector<std::string> words = config_detail::string_list(f, list_key);
    from_list.emplace();
    for (size_t i = 0; i < words.size(); ++i) {
      std::optional<LayerKind> k = nemotron_word(words[i]);
      if (!k)
        f.fail(
            "{}[{}] is \"{}\"; expected one of linear_attention, full_attention, mlp, moe (or mamba, "
            "attention)",
            list_key, i, clip_for_message(words[i], 40));
      from_list->push_back(*k);
    }
    config_detail::check_layer_count(f, list_key, from_list->size());
  }
  if (f.has("hybrid_override_pattern")) {
    std::string pattern = f.text("hybrid_override_pattern", "");
    from_pattern.emplace();
    for (size_t i = 0; i < pattern.size(); ++i) {
      std::optional<LayerKind> k = nemotron_char(pattern[i]);
      if (!k)
        f.fail("hybrid_override_pattern[{}] is '{}'; expected M (Mamba2), * (attention), - (MLP) or E (MoE)",
               i, clip_for_message(pattern.substr(i, 1)));
      from_pattern->push_back(*k);
    }
    config_detail::check_layer_count(f, "hybrid_override_pattern", from_pattern->size());
  }
  if (from_list && from_pattern && *from_list != *from_pattern)
    f.fail("{} and hybrid_override_pattern describe different layers", list_key);
  if (from_list) return *from_list;
  if (from_pattern) return *from_pattern;
  f.fail("missing the layer list: neither 'hybrid_override_pattern' nor 'layers_block_type' is present");
}

void read_nemotron_h_config(const ConfigFields& f, ModelConfig& cfg) {
  config_detail::CommonDefaults d;
  d.eps_key = "layer_norm_epsilon";
  d.eps = 1e-5;
  d.max_position_embeddings = 4096;
  d.pad = 0;
  d.bos = 1;
  d.eos = {2};
  config_detail::read_common(f, d, cfg);
  for (LayerKind k : nemotron_layers(f)) cfg.layers.push_back(LayerSpec{k, std::nullopt});

  // Older NVIDIA files spell head_dim attention_head_dim.
  if (cfg.has(LayerKind::attention))
    config_detail::read_attention(f, 8, f.pick({"head_dim", "attention_head_dim"}), 128, cfg.attention);
  if (cfg.has(LayerKind::mamba2)) {
    // The mamba_* spellings are transformers' backward-compatible names; like transformers, they win when
    // present.
    Mamba2Config& m = cfg.mamba2;
    m.num_heads = f.size("mamba_num_heads");
    m.head_dim = f.size("mamba_head_dim");
    m.ssm_state_size = f.size("ssm_state_size", 128);
    m.n_groups = f.size(f.pick({"mamba_n_groups", "n_groups"}), 8);
    m.conv_kernel = f.size(f.pick({"mamba_d_conv", "conv_kernel"}), 4);
    m.expand = f.size(f.pick({"mamba_expand", "expand"}), 2);
    m.chunk_size = f.size(f.pick({"mamba_chunk_size", "chunk_size"}), 128);
    m.time_step_min = f.number(f.pick({"mamba_dt_min", "time_step_min"}), 0.001);
    m.time_step_max = f.number(f.pick({"mamba_dt_max", "time_step_max"}), 0.1);
    m.time_step_floor = f.number(f.pick({"mamba_dt_init_floor", "time_step_floor"}), 1e-4);
    m.use_conv_bias = f.flag(f.pick({"mamba_conv_bias", "use_conv_bias"}), true);
    m.use_bias = f.flag("use_bias", false);
    m.hidden_act = f.text("mamba_hidden_act", "silu");
    std::string_view limit_key = f.pick({"mamba_dt_limit", "time_step_limit"});
    if (const nlohmann::json* lim = f.find(limit_key)) {
      std::optional<double> lo, hi;
      if (lim->is_array() && lim->size() == 2) {
        lo = json_number((*lim)[0]);
        hi = json_number((*lim)[1]);
      }
      if (!lo || !hi || std::isnan(*lo) || std::isnan(*hi) || *lo > *hi || *lo < 0)
        f.fail("'{}' must be [min, max] with 0 ≤ min ≤ max, got {}", limit_key,
               clip_for_message(lim->dump(), 80));
      m.time_step_limit = {*lo, *hi};
    }
    if (m.num_heads % m.n_groups != 0)
      f.fail("mamba_num_heads {} is not a multiple of n_groups {}", m.num_heads, m.n_groups);
  }
  if (cfg.has(LayerKind::mlp) || cfg.has(LayerKind::moe)) {
    cfg.mlp.hidden_act = f.text("mlp_hidden_act", "relu2");
    cfg.mlp.bias = f.flag("mlp_bias", false);
  }
  if (cfg.has(LayerKind::mlp)) cfg.mlp.intermediate_size = f.size("intermediate_size");
  if (cfg.has(LayerKind::moe)) {
    MoeConfig& e = cfg.moe;
    e.num_experts = f.size(f.pick({"n_routed_experts", "num_local_experts"}));
    e.num_experts_per_tok = f.size("num_experts_per_tok");
    e.moe_intermediate_size = f.size("moe_intermediate_size");
    e.shared_expert_intermediate_size = f.size("moe_shared_expert_intermediate_size", 7688);
    e.n_shared_experts = f.count("n_shared_experts", 1);
    e.n_group = f.size("n_group", 1);
    e.topk_group = f.size("topk_group", 1);
    e.norm_topk_prob = f.flag("norm_topk_prob", true);
    e.routed_scaling_factor = f.positive("routed_scaling_factor", 1.0);
    e.latent_size = f.optional_size("moe_latent_size");
    e.hidden_act = cfg.mlp.hidden_act;
    if (e.num_experts_per_tok > e.num_experts)
      f.fail("num_experts_per_tok {} exceeds n_routed_experts {}", e.num_experts_per_tok, e.num_experts);
    if (e.num_experts % e.n_group != 0)
      f.fail("n_routed_experts {} is not a multiple of n_group {}", e.num_experts, e.n_group);
    if (e.topk_group > e.n_group) f.fail("topk_group {} exceeds n_group {}", e.topk_group, e.n_group);
  }
}

}  // namespace

ModelEntry nemotron_h_model_entry() {
  return {{"nemotron_h", {"nemotron_h"}, &read_nemotron_h_config}, &make_nemotron_h};
}

}  // namespace keel::models
