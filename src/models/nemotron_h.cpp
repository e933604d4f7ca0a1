// nemotron_h (transformers models/nemotron_h/modeling_nemotron_h.py). Every block is
//   hidden += mixer(rms_norm(hidden) · w)     backbone.layers.N.{norm, mixer.*}
// with one mixer per layer kind: M Mamba2 (blocks/mamba2), * attention without positional encoding, - MLP
// down(relu²(up(x))), E MoE (sigmoid router + e_score_correction_bias for the choice only, group-limited
// top-k, unbiased weights normalized × routed_scaling_factor; relu² experts plus a shared expert). Embeddings
// backbone.embeddings, final norm backbone.norm_f, lm_head (or tied).
#include <fmt/format.h>

#include "core/error.h"
#include "models/blocks/attention.h"
#include "models/blocks/mamba2.h"
#include "models/blocks/mlp.h"
#include "models/blocks/moe.h"
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
  // Experts as published (experts.N.up_proj.weight) or fused 3-D (experts.up_proj [E, I, d]).
  const bool fused = w.has("experts.up_proj");
  Tensor up3 = fused ? w.get("experts.up_proj", {E, I, d}) : Tensor();
  Tensor down3 = fused ? w.get("experts.down_proj", {E, d, I}) : Tensor();
  for (int64_t e = 0; e < E; ++e) {
    mw.up.push_back(fused ? Weight(up3.select(e)) : w.matrix(fmt::format("experts.{}.up_proj", e), I, d));
    mw.down.push_back(fused ? Weight(down3.select(e))
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
  WeightBinder root(store, be.pool());
  DecoderSpec spec;
  bind_embeddings(cfg, root, spec, "backbone.embeddings.weight", "backbone.norm_f.weight");
  const int64_t d = cfg.hidden_size;
  AttentionSpec as;
  as.hidden = d;
  as.n_q = cfg.attention.num_attention_heads;
  as.n_kv = cfg.attention.num_key_value_heads;
  as.head_dim = cfg.attention.head_dim;
  as.bias = cfg.attention.attention_bias;

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

}  // namespace keel::models
