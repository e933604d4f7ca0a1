// llama (transformers models/llama/modeling_llama.py): pre-norm transformer, RMSNorm × w, GQA attention with
// RoPE (default, linear or llama3 scaling per rope_parameters), attention_bias on q/k/v/o, SwiGLU MLP with
// mlp_bias, untied lm_head unless tie_word_embeddings.
#include "models/transformer.h"

namespace keel::models {

std::unique_ptr<Model> make_llama(const ModelConfig& cfg, WeightStore& store, Backend& be) {
  return build_transformer(cfg, store, be, TransformerOptions{});
}

}  // namespace keel::models
