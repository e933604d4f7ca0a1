#include "load/config.h"

#include <algorithm>
#include <filesystem>

#include "load/config_fields.h"
#include "load/json_util.h"

namespace keel {

using config_detail::ConfigFields;

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

const std::optional<QuantParams>* QuantizationConfig::find(std::string_view module) const {
  for (const auto& [path, params] : modules)
    if (path == module) return &params;
  return nullptr;
}

void QuantizationConfig::rename_prefix(std::string_view from, std::string_view to) {
  // An entry names a module, not a tensor: with from = "language_model.lm_head." the entry is
  // "language_model.lm_head" (mlx-lm's mixed recipes write one), renamed to `to` without its dot.
  const bool dotted = from.ends_with('.') && to.ends_with('.');
  for (auto& entry : modules)
    if (entry.first.starts_with(from))
      entry.first = std::string(to) + entry.first.substr(from.size());
    else if (dotted && entry.first == from.substr(0, from.size() - 1))
      entry.first = std::string(to.substr(0, to.size() - 1));
}

namespace {

QuantParams quant_params(const nlohmann::json& obj, std::string_view where, const QuantParams* fallback) {
  QuantParams p;
  auto read = [&](const char* key, int32_t fallback_value, bool (*valid)(int64_t), const char* allowed) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
      if (fallback) return fallback_value;
      throw_error(ErrorCode::invalid_file, "{}: \"{}\" is missing", where, key);
    }
    if (!it->is_number_integer() || !valid(it->get<int64_t>()))
      throw_error(ErrorCode::invalid_file, "{}.{} is {}, not one of {}", where, key,
                  clip_for_message(it->dump(), 40), allowed);
    return static_cast<int32_t>(it->get<int64_t>());
  };
  p.bits = read(
      "bits", fallback ? fallback->bits : 0,
      [](int64_t b) { return b == 2 || b == 3 || b == 4 || b == 5 || b == 6 || b == 8; }, "2, 3, 4, 5, 6, 8");
  p.group_size = read(
      "group_size", fallback ? fallback->group_size : 0,
      [](int64_t g) { return g == 32 || g == 64 || g == 128; }, "32, 64, 128");
  return p;
}

}  // namespace

std::optional<QuantizationConfig> parse_quantization(const nlohmann::json& root, std::string_view source) {
  const char* key = "quantization";
  auto it = root.find(key);
  if (it == root.end() || it->is_null()) {
    key = "quantization_config";
    it = root.find(key);
    if (it == root.end() || it->is_null()) return std::nullopt;
    if (it->is_object()) {
      auto method = it->find("quant_method");
      if (method != it->end() && !method->is_null())
        throw_error(ErrorCode::unsupported,
                    "{}: quantization_config.quant_method {} is not supported (keel reads MLX affine "
                    "quantization and unquantized f32/bf16/f16 weights)",
                    source, clip_for_message(method->dump(), 40));
    }
  }
  const std::string where = fmt::format("{}: {}", source, key);
  if (!it->is_object()) throw_error(ErrorCode::invalid_file, "{} must be an object", where);
  auto mode = it->find("mode");
  if (mode != it->end() && !mode->is_null()) {
    if (!mode->is_string()) throw_error(ErrorCode::invalid_file, "{}.mode must be a string", where);
    const std::string m = mode->get<std::string>();
    if (m != "affine")
      throw_error(ErrorCode::unsupported,
                  "{}.mode \"{}\" is not supported: keel reads MLX's affine quantization only (not mxfp4, "
                  "mxfp8 or nvfp4)",
                  where, clip_for_message(m, 40));
  }
  QuantizationConfig q;
  q.base = quant_params(*it, where, nullptr);
  for (auto e = it->begin(); e != it->end(); ++e) {
    if (e.key() == "bits" || e.key() == "group_size" || e.key() == "mode") continue;
    const std::string entry = fmt::format("{}[\"{}\"]", where, clip_for_message(e.key(), 80));
    if (e->is_boolean() && !e->get<bool>()) {
      q.modules.emplace_back(e.key(), std::nullopt);
    } else if (e->is_object()) {
      auto emode = e->find("mode");
      if (emode != e->end() && !emode->is_null() && !(emode->is_string() && *emode == "affine"))
        throw_error(ErrorCode::unsupported,
                    "{}.mode {} is not supported: keel reads MLX's affine quantization only", entry,
                    clip_for_message(emode->dump(), 40));
      q.modules.emplace_back(e.key(), quant_params(*e, entry, &q.base));
    } else if (e->is_boolean()) {
      q.modules.emplace_back(e.key(), q.base);  // true: the default parameters
    } else {
      throw_error(ErrorCode::invalid_file, "{} must be an object {{\"bits\", \"group_size\"}} or false",
                  entry);
    }
  }
  return q;
}

ModelConfig parse_model_config(std::string_view json_text, std::string_view source,
                               std::span<const ConfigReader> readers) {
  nlohmann::json root = parse_json_lenient(json_text, source);
  if (!root.is_object()) throw_error(ErrorCode::invalid_file, "{}: not a JSON object", source);
  auto mt = root.find("model_type");
  if (mt == root.end() || !mt->is_string())
    throw_error(ErrorCode::invalid_file, "{}: missing \"model_type\" (a string such as \"qwen3\")", source);
  const std::string type = mt->get<std::string>();

  for (const ConfigReader& r : readers) {
    if (std::find(r.config_names.begin(), r.config_names.end(), type) == r.config_names.end()) continue;
    ModelConfig cfg;
    cfg.model_type = std::string(r.model_type);
    cfg.config_model_type = type;
    r.read(ConfigFields(root, fmt::format("{}: {}", source, clip_for_message(type, 40))), cfg);
    cfg.quantization = parse_quantization(root, source);
    return cfg;
  }
  std::string list;
  for (const ConfigReader& r : readers)
    for (std::string_view t : r.config_names) list += (list.empty() ? "" : ", ") + std::string(t);
  throw_error(ErrorCode::unsupported, "{}: model_type \"{}\" is not supported (keel reads: {})", source,
              clip_for_message(type, 60), list);
}

ModelConfig load_model_config(const std::string& folder, std::span<const ConfigReader> readers) {
  std::string path = (std::filesystem::path(folder) / "config.json").string();
  return parse_model_config(read_text_file(path, 16 << 20), path, readers);
}

}  // namespace keel
