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
