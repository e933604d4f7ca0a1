// qwen3 (transformers models/qwen3/modeling_qwen3.py): the llama layout plus a per-head RMSNorm (× w) of q
// and k over head_dim before RoPE (cfg.attention.qk_norm, set by the config parser); head_dim from the
// config; tied embeddings when tie_word_embeddings.
#include "models/registry.h"
#include "models/transformer.h"

namespace keel::models {

std::unique_ptr<Model> make_qwen3(const ModelConfig& cfg, WeightStore& store, Backend& be) {
  return build_transformer(cfg, store, be, TransformerOptions{});
}

// config.json (transformers Qwen3Config). Sliding-window layers are refused: keel has no sliding window.
namespace {

void read_qwen3_config(const config_detail::ConfigFields& f, ModelConfig& cfg) {
  using namespace config_detail;
  read_common(f, CommonDefaults{}, cfg);
  int64_t n = f.layer_count();
  if (f.has("layer_types")) {
    std::vector<std::string> words = string_list(f, "layer_types");
    check_layer_count(f, "layer_types", words.size());
    for (size_t i = 0; i < words.size(); ++i) {
      if (words[i] == "sliding_attention")
        throw_error(ErrorCode::unsupported,
                    "{}: layer_types[{}] is sliding_attention; keel has no sliding window yet", f.context(),
                    i);
      if (words[i] != "full_attention" && words[i] != "attention")
        f.fail("layer_types[{}] is \"{}\"; expected full_attention", i, clip_for_message(words[i], 40));
    }
  } else if (f.flag("use_sliding_window", false) && n > f.count("max_window_layers", 28)) {
    throw_error(ErrorCode::unsupported, "{}: use_sliding_window is true; keel has no sliding window yet",
                f.context());
  }
  for (int64_t i = 0; i < n; ++i) cfg.layers.push_back({LayerKind::attention, LayerKind::mlp});
  read_attention(f, 32, "head_dim", 128, cfg.attention);
  cfg.attention.qk_norm = true;
  cfg.attention.rope = read_rope(f, 1.0);
  cfg.mlp.intermediate_size = f.size("intermediate_size");
  cfg.mlp.hidden_act = f.text("hidden_act", "silu");
}

}  // namespace

ModelEntry qwen3_model_entry() {
  return {{"qwen3", {"qwen3"}, &read_qwen3_config}, &make_qwen3};
}

}  // namespace keel::models
