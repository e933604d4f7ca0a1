// The pre-norm decoder-only transformer shared by the Llama-style families, under Hugging Face's names:
//   model.embed_tokens, model.layers.N.{input_layernorm, self_attn.*, post_attention_layernorm, mlp.*},
//   model.norm, lm_head (or the embedding when tie_word_embeddings).
// Each model file states only where its family differs.
#pragma once
#include <memory>

#include "backend/backend.h"
#include "load/config.h"
#include "load/weight_store.h"
#include "models/decoder.h"
#include "models/model.h"
#include "models/weights.h"

namespace keel::models {

struct TransformerOptions {
  ops::NormScale norm_scale = ops::NormScale::weight;  // every RMSNorm: w (llama, qwen3) or 1 + w
};

std::unique_ptr<Model> build_transformer(const ModelConfig& cfg, const WeightStore& store, Backend& be,
                                         const TransformerOptions& opt);

// model.embed_tokens, model.norm and lm_head (tied or not) into `spec`.
void bind_embeddings(const ModelConfig& cfg, const WeightBinder& root, DecoderSpec& spec,
                     std::string_view embed_name, std::string_view final_norm_name);

}  // namespace keel::models
