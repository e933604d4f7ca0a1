// The typed field reads and the settings several families share (config_fields.h).
#include "load/config_fields.h"

#include <cmath>

namespace keel::config_detail {

const nlohmann::json* ConfigFields::find(std::string_view key) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool ConfigFields::is_null(std::string_view key) const {
  auto it = obj_.find(key);
  return it != obj_.end() && it->is_null();
}

std::string_view ConfigFields::pick(std::initializer_list<std::string_view> keys) const {
  std::string_view last;
  for (std::string_view k : keys) {
    if (has(k)) return k;
    last = k;
  }
  return last;
}

int64_t ConfigFields::integer_in(std::string_view key, const nlohmann::json& v, int64_t lo, int64_t hi,
                                 const char* what) const {
  std::optional<int64_t> i = v.is_boolean() ? std::nullopt : json_integer(v);
  if (!i || *i < lo || *i > hi) fail("'{}' must be {}, got {}", key, what, clip_for_message(v.dump(), 60));
  return *i;
}

int64_t ConfigFields::size(std::string_view key) const {
  const nlohmann::json* v = find(key);
  if (!v) fail("missing required field '{}'", key);
  return integer_in(key, *v, 1, kMaxConfigSize, "a positive integer");
}

int64_t ConfigFields::size(std::string_view key, int64_t fallback) const {
  const nlohmann::json* v = find(key);
  return v ? integer_in(key, *v, 1, kMaxConfigSize, "a positive integer") : fallback;
}

int64_t ConfigFields::layer_count() const {
  const nlohmann::json* v = find("num_hidden_layers");
  if (!v) fail("missing required field 'num_hidden_layers'");
  return integer_in("num_hidden_layers", *v, 1, kMaxLayers, "a layer count in [1, 100000]");
}

int64_t ConfigFields::count(std::string_view key, int64_t fallback) const {
  const nlohmann::json* v = find(key);
  return v ? integer_in(key, *v, 0, kMaxConfigSize, "a non-negative integer") : fallback;
}

std::optional<int64_t> ConfigFields::optional_size(std::string_view key) const {
  const nlohmann::json* v = find(key);
  if (!v) return std::nullopt;
  return integer_in(key, *v, 1, kMaxConfigSize, "a positive integer");
}

std::optional<int64_t> ConfigFields::optional_token_id(std::string_view key) const {
  const nlohmann::json* v = find(key);
  if (!v) return std::nullopt;
  return integer_in(key, *v, 0, kMaxConfigSize, "a token id (non-negative integer)");
}

std::vector<int64_t> ConfigFields::token_ids(std::string_view key, std::vector<int64_t> fallback) const {
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  std::vector<int64_t> ids;
  if (v->is_array()) {
    for (const nlohmann::json& e : *v)
      ids.push_back(integer_in(key, e, 0, kMaxConfigSize, "a list of token ids"));
  } else {
    ids.push_back(integer_in(key, *v, 0, kMaxConfigSize, "a token id or a list of them"));
  }
  return ids;
}

double ConfigFields::number(std::string_view key, double fallback) const {
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  std::optional<double> d = json_number(*v);
  if (!d || std::isnan(*d)) fail("'{}' must be a number, got {}", key, clip_for_message(v->dump(), 60));
  return *d;
}

double ConfigFields::positive(std::string_view key, double fallback) const {
  double d = number(key, fallback);
  if (!std::isfinite(d) || d <= 0) fail("'{}' must be a positive finite number, got {}", key, d);
  return d;
}

bool ConfigFields::flag(std::string_view key, bool fallback) const {
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  if (!v->is_boolean()) fail("'{}' must be true or false, got {}", key, clip_for_message(v->dump(), 60));
  return v->get<bool>();
}

std::string ConfigFields::text(std::string_view key, std::string fallback) const {
  const nlohmann::json* v = find(key);
  if (!v) return fallback;
  if (!v->is_string()) fail("'{}' must be a string, got {}", key, clip_for_message(v->dump(), 60));
  return v->get<std::string>();
}

void check_layer_count(const ConfigFields& f, std::string_view list_name, size_t entries) {
  if (entries == 0) f.fail("'{}' is empty", list_name);
  if (static_cast<int64_t>(entries) > config_detail::kMaxLayers)
    f.fail("'{}' has too many entries", list_name);
  if (f.has("num_hidden_layers")) {
    int64_t n = f.layer_count();
    if (n != static_cast<int64_t>(entries))
      f.fail("{} has {} entries but num_hidden_layers is {}", list_name, entries, n);
  }
}

// transformers' RotaryEmbeddingConfigMixin: rope_scaling (older name) wins over rope_parameters; rope_theta
// and partial_rotary_factor come from that dict, else from the top-level keys, else the defaults; "type" is
// the older spelling of "rope_type". A dict keyed by layer type ({"full_attention": {...}}) is read at
// "full_attention".
RopeConfig read_rope(const ConfigFields& f, double default_partial_rotary_factor) {
  RopeConfig rope;
  const nlohmann::json* params = nullptr;
  std::string_view params_key = "rope_parameters";
  for (std::string_view key : {"rope_scaling", "rope_parameters"}) {
    const nlohmann::json* p = f.find(key);
    if (!p) continue;
    if (!p->is_object()) f.fail("'{}' must be an object", key);
    if (!p->empty()) {
      params = p;
      params_key = key;
      break;
    }
  }
  if (params && params->contains("full_attention") && (*params)["full_attention"].is_object())
    params = &(*params)["full_attention"];
  std::string context = f.context() + ": " + std::string(params_key);
  nlohmann::json empty = nlohmann::json::object();
  ConfigFields p(params ? *params : empty, context);

  rope.type = p.text(p.pick({"rope_type", "type"}), "default");
  rope.theta = p.has("rope_theta") ? p.positive("rope_theta", 10000.0) : f.positive("rope_theta", 10000.0);
  rope.partial_rotary_factor = p.has("partial_rotary_factor")
                                   ? p.positive("partial_rotary_factor", 1.0)
                                   : f.positive("partial_rotary_factor", default_partial_rotary_factor);
  if (rope.partial_rotary_factor > 1.0)
    f.fail("partial_rotary_factor {} is above 1", rope.partial_rotary_factor);
  if (p.has("factor")) rope.factor = p.positive("factor", 1.0);
  rope.original_max_position_embeddings = p.optional_size("original_max_position_embeddings");
  if (!rope.original_max_position_embeddings)
    rope.original_max_position_embeddings = f.optional_size("original_max_position_embeddings");
  if (p.has("low_freq_factor")) rope.low_freq_factor = p.positive("low_freq_factor", 1.0);
  if (p.has("high_freq_factor")) rope.high_freq_factor = p.positive("high_freq_factor", 1.0);
  if (p.has("attention_factor")) rope.attention_factor = p.positive("attention_factor", 1.0);
  if (p.has("beta_fast")) rope.beta_fast = p.number("beta_fast", 32.0);
  if (p.has("beta_slow")) rope.beta_slow = p.number("beta_slow", 1.0);
  if (const nlohmann::json* s = p.find("mrope_section")) {
    if (!s->is_array()) p.fail("'mrope_section' must be a list of sizes");
    for (const nlohmann::json& e : *s) {
      std::optional<int64_t> v = e.is_boolean() ? std::nullopt : json_integer(e);
      if (!v || *v < 0 || *v > kMaxConfigSize) p.fail("'mrope_section' must be a list of sizes");
      rope.mrope_section.push_back(*v);
    }
  }
  rope.mrope_interleaved = p.flag("mrope_interleaved", false);
  return rope;
}

void read_common(const ConfigFields& f, const CommonDefaults& d, ModelConfig& cfg) {
  cfg.hidden_size = f.size("hidden_size");
  cfg.vocab_size = f.size("vocab_size");
  cfg.max_position_embeddings = f.size("max_position_embeddings", d.max_position_embeddings);
  cfg.rms_norm_eps = f.positive(d.eps_key, d.eps);
  cfg.tie_word_embeddings = f.flag("tie_word_embeddings", false);
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

}  // namespace keel::config_detail
