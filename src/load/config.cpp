#include "load/config.h"

#include <cmath>
#include <filesystem>

#include "load/config_fields.h"
#include "load/json_util.h"

namespace keel {

using config_detail::ConfigFields;
using config_detail::kMaxConfigSize;

std::string_view layer_kind_name(LayerKind kind) {
  switch (kind) {
    case LayerKind::mamba2:
      return "mamba2";
    case LayerKind::attention:
      return "attention";
    case LayerKind::mlp:
      return "mlp";
    case LayerKind::moe:
      return "moe";
    case LayerKind::gated_deltanet:
      return "gated_deltanet";
  }
  return "unknown";
}

int64_t ModelConfig::count(LayerKind kind) const {
  int64_t n = 0;
  for (const LayerSpec& l : layers) n += (l.kind == kind) + (l.ffn == kind);
  return n;
}

const std::vector<std::string_view>& supported_model_types() {
  static const std::vector<std::string_view> kTypes = {
      "nemotron_h", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text", "qwen3", "llama"};
  return kTypes;
}

namespace config_detail {

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

}  // namespace config_detail

ModelConfig parse_model_config(std::string_view json_text, std::string_view source) {
  nlohmann::json root = parse_json_lenient(json_text, source);
  if (!root.is_object()) throw_error(ErrorCode::invalid_file, "{}: not a JSON object", source);
  auto mt = root.find("model_type");
  if (mt == root.end() || !mt->is_string())
    throw_error(ErrorCode::invalid_file, "{}: missing \"model_type\" (a string such as \"qwen3\")", source);
  const std::string type = mt->get<std::string>();

  ModelConfig cfg;
  cfg.config_model_type = type;
  std::string context = fmt::format("{}: {}", source, clip_for_message(type, 40));
  ConfigFields top(root, context);
  if (type == "nemotron_h") {
    cfg.model_type = type;
    config_detail::parse_nemotron_h(top, cfg);
  } else if (type == "qwen3_5" || type == "qwen3_5_moe" || type == "qwen3_5_text" ||
             type == "qwen3_5_moe_text") {
    bool moe = type == "qwen3_5_moe" || type == "qwen3_5_moe_text";
    cfg.model_type = moe ? "qwen3_5_moe" : "qwen3_5";
    // Published folders (…ForConditionalGeneration) nest the text model's settings under "text_config".
    const nlohmann::json* text = &root;
    auto tc = root.find("text_config");
    if ((type == "qwen3_5" || type == "qwen3_5_moe") && tc != root.end() && !tc->is_null()) {
      if (!tc->is_object())
        throw_error(ErrorCode::invalid_file, "{}: \"text_config\" is not an object", context);
      text = &*tc;
      cfg.nested_text_config = true;
      if (tc->contains("model_type") && (*tc)["model_type"].is_string())
        cfg.config_model_type = (*tc)["model_type"].get<std::string>();
    }
    ConfigFields f(*text, cfg.nested_text_config ? context + ": text_config" : context);
    config_detail::parse_qwen3_5(f, top, moe, cfg);
  } else if (type == "qwen3") {
    cfg.model_type = type;
    config_detail::parse_qwen3(top, cfg);
  } else if (type == "llama") {
    cfg.model_type = type;
    config_detail::parse_llama(top, cfg);
  } else {
    std::string list;
    for (std::string_view t : supported_model_types()) list += (list.empty() ? "" : ", ") + std::string(t);
    throw_error(ErrorCode::unsupported, "{}: model_type \"{}\" is not supported (keel reads: {})", source,
                clip_for_message(type, 60), list);
  }
  return cfg;
}

ModelConfig load_model_config(const std::string& folder) {
  std::string path = (std::filesystem::path(folder) / "config.json").string();
  return parse_model_config(read_text_file(path, 16 << 20), path);
}

}  // namespace keel
