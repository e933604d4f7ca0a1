#include "models/transformer.h"

#include <fmt/format.h>

#include "models/blocks/attention.h"
#include "models/blocks/mlp.h"

namespace keel::models {

void bind_embeddings(const ModelConfig& cfg, const WeightBinder& root, DecoderSpec& spec,
                     std::string_view embed_name, std::string_view final_norm_name) {
  spec.model_type = cfg.model_type;
  spec.hidden = cfg.hidden_size;
  spec.vocab = cfg.vocab_size;
  spec.context_limit = cfg.max_position_embeddings;
  spec.norm.eps = static_cast<float>(cfg.rms_norm_eps);
  std::string_view embed_base = embed_name.substr(0, embed_name.rfind(".weight"));  // ".weight" / ".scales"
  spec.embed = root.matrix(embed_base, cfg.vocab_size, cfg.hidden_size);
  spec.final_norm = root.vec(final_norm_name, cfg.hidden_size);
  spec.lm_head =
      cfg.tie_word_embeddings ? spec.embed : root.matrix("lm_head", cfg.vocab_size, cfg.hidden_size);
}

std::unique_ptr<Model> build_transformer(const ModelConfig& cfg, const WeightStore& store, Backend& be,
                                         const TransformerOptions& opt) {
  WeightBinder root(store, be, {}, cfg.quantization ? &*cfg.quantization : nullptr);
  DecoderSpec spec;
  bind_embeddings(cfg, root, spec, "model.embed_tokens.weight", "model.norm.weight");
  spec.norm.scale = opt.norm_scale;
  const AttentionConfig& a = cfg.attention;
  if (a.rope) spec.rope.emplace(*a.rope, a.head_dim);
  AttentionSpec as;
  as.hidden = cfg.hidden_size;
  as.n_q = a.num_attention_heads;
  as.n_kv = a.num_key_value_heads;
  as.head_dim = a.head_dim;
  as.bias = a.attention_bias;
  as.qk_norm = a.qk_norm;
  as.qk_norm_scale = opt.norm_scale;
  as.norm_eps = spec.norm.eps;
  as.rope = a.rope.has_value();
  as.kv_dtype = cfg.kv_cache_dtype;
  const ops::Activation act = activation_from_name(cfg.mlp.hidden_act, "hidden_act");

  std::vector<DecoderLayer> layers;
  for (int64_t i = 0; i < cfg.num_layers(); ++i) {
    const WeightBinder w = root.sub(fmt::format("model.layers.{}.", i));
    DecoderLayer layer;
    layer.parts.push_back({w.vec("input_layernorm.weight", cfg.hidden_size),
                           std::make_unique<AttentionBlock>(as, bind_attention(w.sub("self_attn."), as))});
    MlpWeights mw = bind_mlp(w.sub("mlp."), cfg.hidden_size, cfg.mlp.intermediate_size, true, cfg.mlp.bias);
    layer.parts.push_back({w.vec("post_attention_layernorm.weight", cfg.hidden_size),
                           std::make_unique<MlpBlock>(std::move(mw), act)});
    layers.push_back(std::move(layer));
  }
  return std::make_unique<DecoderModel>(be, std::move(spec), std::move(layers));
}

}  // namespace keel::models
