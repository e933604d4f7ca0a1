// One parser per model family. Defaults are transformers 5.x's class defaults (named beside each read).
#include <cmath>

#include "load/config_fields.h"
#include "load/json_util.h"

namespace keel::config_detail {

namespace {

// Token ids, eps, context and tying: every family has them, with its own defaults.
struct CommonDefaults {
  std::string_view eps_key = "rms_norm_eps";
  double eps = 1e-6;
  int64_t max_position_embeddings = 32768;
  std::optional<int64_t> bos, pad;
  std::vector<int64_t> eos;
};

void read_common(const ConfigFields& f, const CommonDefaults& d, ModelConfig& cfg) {
  cfg.hidden_size = f.size("hidden_size");
  cfg.vocab_size = f.size("vocab_size");
  cfg.max_position_embeddings = f.size("max_position_embeddings", d.max_position_embeddings);
  cfg.rms_norm_eps = f.positive(d.eps_key, d.eps);
  cfg.tie_word_embeddings = f.flag("tie_word_embeddings", false);
  // An explicit null means "no such token", not the family's default.
  auto present = [&](std::string_view key) { return f.has(key) || f.is_null(key); };
  cfg.bos_token_id = present("bos_token_id") ? f.optional_token_id("bos_token_id") : d.bos;
  cfg.pad_token_id = present("pad_token_id") ? f.optional_token_id("pad_token_id") : d.pad;
  cfg.eos_token_ids = present("eos_token_id") ? f.token_ids("eos_token_id", {}) : d.eos;
}

std::vector<std::string> string_list(const ConfigFields& f, std::string_view key) {
  const nlohmann::json* v = f.find(key);
  if (!v->is_array()) f.fail("'{}' must be a list of strings", key);
  std::vector<std::string> out;
  for (const nlohmann::json& e : *v) {
    if (!e.is_string()) f.fail("'{}' must be a list of strings, has {}", key, clip_for_message(e.dump(), 40));
    out.push_back(e.get<std::string>());
  }
  return out;
}

// `head_dim_key`: where the family keeps head_dim. An explicit null num_key_value_heads means "as many as the
// query heads" in every family; an absent one takes the family's default.
void read_attention(const ConfigFields& f, int64_t default_kv_heads, std::string_view head_dim_key,
                    int64_t default_head_dim, AttentionConfig& a) {
  a.num_attention_heads = f.size("num_attention_heads");
  a.num_key_value_heads = f.has("num_key_value_heads")       ? f.size("num_key_value_heads")
                          : f.is_null("num_key_value_heads") ? a.num_attention_heads
                                                             : default_kv_heads;
  a.head_dim = f.size(head_dim_key, default_head_dim);
  a.attention_bias = f.flag("attention_bias", false);
  if (a.num_attention_heads % a.num_key_value_heads != 0)
    f.fail("num_attention_heads {} is not a multiple of num_key_value_heads {}", a.num_attention_heads,
           a.num_key_value_heads);
}

// ---- nemotron_h ----

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
    std::vector<std::string> words = string_list(f, list_key);
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
    check_layer_count(f, list_key, from_list->size());
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
    check_layer_count(f, "hybrid_override_pattern", from_pattern->size());
  }
  if (from_list && from_pattern && *from_list != *from_pattern)
    f.fail("{} and hybrid_override_pattern describe different layers", list_key);
  if (from_list) return *from_list;
  if (from_pattern) return *from_pattern;
  f.fail("missing the layer list: neither 'hybrid_override_pattern' nor 'layers_block_type' is present");
}

}  // namespace

void parse_nemotron_h(const ConfigFields& f, ModelConfig& cfg) {
  CommonDefaults d;
  d.eps_key = "layer_norm_epsilon";
  d.eps = 1e-5;
  d.max_position_embeddings = 4096;
  d.pad = 0;
  d.bos = 1;
  d.eos = {2};
  read_common(f, d, cfg);
  for (LayerKind k : nemotron_layers(f)) cfg.layers.push_back(LayerSpec{k, std::nullopt});

  // Older NVIDIA files spell head_dim attention_head_dim.
  if (cfg.has(LayerKind::attention))
    read_attention(f, 8, f.pick({"head_dim", "attention_head_dim"}), 128, cfg.attention);
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

// ---- qwen3_5 / qwen3_5_moe (text settings, flat or nested under text_config) ----

void parse_qwen3_5(const ConfigFields& f, const ConfigFields& top, bool moe, ModelConfig& cfg) {
  read_common(f, CommonDefaults{}, cfg);
  // Nested folders may carry tying and token ids at the top level instead of (or as well as) in text_config.
  if (cfg.nested_text_config) {
    if (!f.has("tie_word_embeddings")) cfg.tie_word_embeddings = top.flag("tie_word_embeddings", false);
    if (!f.has("bos_token_id")) cfg.bos_token_id = top.optional_token_id("bos_token_id");
    if (!f.has("pad_token_id")) cfg.pad_token_id = top.optional_token_id("pad_token_id");
    if (!f.has("eos_token_id")) cfg.eos_token_ids = top.token_ids("eos_token_id", {});
  }
  LayerKind ffn = moe ? LayerKind::moe : LayerKind::mlp;
  if (f.has("layer_types")) {
    std::vector<std::string> words = string_list(f, "layer_types");
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
    check_layer_count(f, "layer_types", cfg.layers.size());
  } else {
    // transformers: every full_attention_interval-th layer (1-based) is full attention, the rest linear.
    int64_t n = f.layer_count();
    int64_t interval = f.size("full_attention_interval", 4);
    for (int64_t i = 0; i < n; ++i)
      cfg.layers.push_back({(i + 1) % interval ? LayerKind::gated_deltanet : LayerKind::attention, ffn});
  }

  if (cfg.has(LayerKind::attention)) {
    read_attention(f, moe ? 2 : 4, "head_dim", 256, cfg.attention);
    cfg.attention.qk_norm = true;
    cfg.attention.output_gate = f.flag("attn_output_gate", true);
    cfg.attention.rope = read_rope(f, 0.25);
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

// ---- qwen3 ----

void parse_qwen3(const ConfigFields& f, ModelConfig& cfg) {
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

// ---- llama ----

void parse_llama(const ConfigFields& f, ModelConfig& cfg) {
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

}  // namespace keel::config_detail
