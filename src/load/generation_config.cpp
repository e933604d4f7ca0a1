#include "load/generation_config.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "load/json_util.h"

namespace keel {

namespace {

using Json = nlohmann::json;

constexpr int64_t kMaxGenerationConfigBytes = 1 << 20;

const Json* present(const Json& root, const char* name) {
  auto it = root.find(name);
  if (it == root.end() || it->is_null()) return nullptr;
  return &*it;
}

// A number within [lo, hi]; `lo_open` excludes lo itself.
std::optional<float> number_in(const Json& root, const char* name, double lo, bool lo_open, double hi,
                               const std::string& source) {
  const Json* v = present(root, name);
  if (!v) return std::nullopt;
  std::optional<double> x = json_number(*v);
  if (!x || v->is_boolean())
    throw_error(ErrorCode::invalid_file, "{}: '{}' must be a number, got {}", source, name,
                clip_for_message(v->dump()));
  if (!std::isfinite(*x) || *x < lo || (lo_open && *x == lo) || *x > hi)
    throw_error(ErrorCode::invalid_file, "{}: '{}' is {}, outside {}{}, {}]", source, name, *x,
                lo_open ? "(" : "[", lo, hi);
  return static_cast<float>(*x);
}

int32_t token_id(const Json& v, const std::string& where, const std::string& source) {
  std::optional<int64_t> id = v.is_boolean() ? std::nullopt : json_integer(v);
  if (!id || *id < 0 || *id > std::numeric_limits<int32_t>::max())
    throw_error(ErrorCode::invalid_file, "{}: '{}' must be a token id (an integer ≥ 0), got {}", source,
                where, clip_for_message(v.dump()));
  return static_cast<int32_t>(*id);
}

}  // namespace

GenerationConfig parse_generation_config(std::string_view text, const std::string& source) {
  Json root = parse_json_lenient(text, source);
  if (!root.is_object()) throw_error(ErrorCode::invalid_file, "{}: not a JSON object", source);
  GenerationConfig g;
  if (const Json* eos = present(root, "eos_token_id")) {
    if (eos->is_array()) {
      for (size_t i = 0; i < eos->size(); ++i)
        g.eos_token_ids.push_back(token_id((*eos)[i], "eos_token_id[" + std::to_string(i) + "]", source));
    } else {
      g.eos_token_ids.push_back(token_id(*eos, "eos_token_id", source));
    }
  }
  g.temperature = number_in(root, "temperature", 0, false, 100, source);
  g.top_p = number_in(root, "top_p", 0, true, 1, source);
  g.min_p = number_in(root, "min_p", 0, false, 1, source);
  g.repetition_penalty = number_in(root, "repetition_penalty", 0, true, 100, source);
  if (const Json* k = present(root, "top_k")) {
    std::optional<int64_t> x = k->is_boolean() ? std::nullopt : json_integer(*k);
    if (!x || *x < 0 || *x > std::numeric_limits<int32_t>::max())
      throw_error(ErrorCode::invalid_file, "{}: 'top_k' must be an integer ≥ 0, got {}", source,
                  clip_for_message(k->dump()));
    g.top_k = static_cast<int32_t>(*x);
  }
  if (const Json* d = present(root, "do_sample")) {
    if (!d->is_boolean())
      throw_error(ErrorCode::invalid_file, "{}: 'do_sample' must be true or false, got {}", source,
                  clip_for_message(d->dump()));
    g.do_sample = d->get<bool>();
  }
  return g;
}

GenerationConfig load_generation_config(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "generation_config.json").string();
  std::error_code ec;
  auto st = std::filesystem::symlink_status(path, ec);
  if (ec || st.type() == std::filesystem::file_type::not_found) return {};
  return parse_generation_config(read_text_file(path, kMaxGenerationConfigBytes), path);
}

}  // namespace keel
