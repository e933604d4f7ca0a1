// qwen3 (transformers models/qwen3/modeling_qwen3.py): the llama layout plus a per-head RMSNorm (× w) of q
// and k over head_dim before RoPE (cfg.attention.qk_norm, set by the config parser); head_dim from the
// config; tied embeddings when tie_word_embeddings.
#include "models/transformer.h"

namespace keel::models {

std::unique_ptr<Model> make_qwen3(const ModelConfig& cfg, WeightStore& store, Backend& be) {
  return build_transformer(cfg, store, be, TransformerOptions{});
}

}  // namespace keel::models
