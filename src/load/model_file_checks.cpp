#include "load/model_file_checks.h"

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "load/json_util.h"

namespace keel {

namespace {

using Json = nlohmann::json;

void check_rope_theta(const Json& obj, const std::string& where, const std::string& path) {
  auto it = obj.find("rope_theta");
  if (it == obj.end() || it->is_null()) return;
  std::optional<double> x = it->is_boolean() ? std::nullopt : json_number(*it);
  if (!x || !std::isfinite(*x) || *x <= 0)
    throw_error(ErrorCode::invalid_file, "{}: '{}rope_theta' must be a positive finite number, got {}", path,
                where, clip_for_message(it->dump(), 60));
}

}  // namespace

void check_config_values(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  const Json root = parse_json_lenient(read_text_file(path, 16 << 20), path);
  if (!root.is_object()) return;  // the config reader says what is wrong
  // Multimodal folders (Qwen3.5) keep the language model's fields under text_config.
  std::vector<std::pair<const Json*, std::string>> scopes{{&root, ""}};
  if (auto tc = root.find("text_config"); tc != root.end() && tc->is_object())
    scopes.push_back({&*tc, "text_config."});
  for (const auto& [scope, prefix] : scopes) {
    check_rope_theta(*scope, prefix, path);
    for (const char* key : {"rope_parameters", "rope_scaling"}) {
      auto p = scope->find(key);
      if (p == scope->end() || !p->is_object()) continue;
      const std::string where = prefix + key + ".";
      check_rope_theta(*p, where, path);
      for (const auto& [name, sub] : p->items())
        if (sub.is_object()) check_rope_theta(sub, where + name + ".", path);
    }
    auto dtype = scope->find("mamba_ssm_cache_dtype");
    if (dtype == scope->end() || dtype->is_null()) continue;
    const bool known =
        dtype->is_string() && (*dtype == "float32" || *dtype == "float16" || *dtype == "bfloat16");
    if (!known)
      throw_error(ErrorCode::invalid_file,
                  "{}: '{}mamba_ssm_cache_dtype' is {}; expected \"float32\", \"float16\" or \"bfloat16\"",
                  path, prefix, clip_for_message(dtype->dump(), 60));
  }
}

}  // namespace keel
