// llama (transformers models/llama/modeling_llama.py): pre-norm transformer, RMSNorm × w, GQA attention with
// RoPE (default, linear or llama3 scaling per rope_parameters), attention_bias on q/k/v/o, SwiGLU MLP with
// mlp_bias, untied lm_head unless tie_word_embeddings.
#include "models/registry.h"
#include "models/transformer.h"

namespace keel::models {

std::unique_ptr<Model> make_llama(const ModelConfig& cfg, WeightStore& store, Backend& be) {
  return build_transformer(cfg, store, be, TransformerOptions{});
}

// config.json (transformers LlamaConfig). Defaults: max_position_embeddings 2048, bos 1, eos 2, eps 1e-6.
namespace {

void read_llama_config(const config_detail::ConfigFields& f, ModelConfig& cfg) {
  using namespace config_detail;
  CommonDefaults d;
  d.max_position_embeddings = 2048;
  d.bos = 1;
  d.eos = {2};
  read_common(f, d, cfg);
  int64_t n = f.layer_count();
  for (int64_t i = 0; i < n; ++i) cfg.layers.push_back({LayerKind::attention, LayerKind::mlp});
  int64_t heads = f.size("num_attention_heads");
  // transformers' validate_architecture: hidden_size must split evenly into heads; head_dim defaults to the
  // quotient.
  if (cfg.hidden_size % heads != 0)
    f.fail("hidden_size {} is not a multiple of num_attention_heads {}", cfg.hidden_size, heads);
  read_attention(f, heads, "head_dim", cfg.hidden_size / heads, cfg.attention);
  cfg.attention.rope = read_rope(f, 1.0);
  cfg.mlp.intermediate_size = f.size("intermediate_size");
  cfg.mlp.hidden_act = f.text("hidden_act", "silu");
  cfg.mlp.bias = f.flag("mlp_bias", false);
}

}  // namespace

ModelEntry llama_model_entry() {
  return {{"llama", {"llama"}, &read_llama_config}, &make_llama};
}

}  // namespace keel::models
