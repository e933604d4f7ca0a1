// Internal to load/: typed reads of one config.json object whose errors name the file, the family and the
// field.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "load/config.h"

namespace keel::config_detail {

// Largest accepted size field: keeps every product the state spec forms checkable in int64.
constexpr int64_t kMaxConfigSize = (int64_t{1} << 31) - 1;
// Largest accepted layer count: far above any real model, and a bound on what a corrupt file makes keel
// allocate.
constexpr int64_t kMaxLayers = 100000;

class ConfigFields {
 public:
  // `obj` must be a JSON object; `context` prefixes errors ("DIR/config.json: nemotron_h").
  ConfigFields(const nlohmann::json& obj, std::string context) : obj_(obj), context_(std::move(context)) {}

  const std::string& context() const { return context_; }
  // The value of `key`, or nullptr when absent or null (transformers treats null as "use the default").
  const nlohmann::json* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  // Present with the value null.
  bool is_null(std::string_view key) const;
  // The first of `keys` that is present, or the last one (for error messages) when none is.
  std::string_view pick(std::initializer_list<std::string_view> keys) const;

  // A size in [1, kMaxConfigSize]: required (named in the error when absent), or with a default.
  int64_t size(std::string_view key) const;
  int64_t size(std::string_view key, int64_t fallback) const;
  // num_hidden_layers, in [1, kMaxLayers].
  int64_t layer_count() const;
  // A size in [0, kMaxConfigSize].
  int64_t count(std::string_view key, int64_t fallback) const;
  std::optional<int64_t> optional_size(std::string_view key) const;
  std::optional<int64_t> optional_token_id(std::string_view key) const;  // a non-negative integer or null
  std::vector<int64_t> token_ids(std::string_view key,
                                 std::vector<int64_t> fallback) const;  // an id or a list
  double number(std::string_view key, double fallback) const;           // finite or ±inf; NaN is rejected
  double positive(std::string_view key, double fallback) const;         // finite and > 0
  bool flag(std::string_view key, bool fallback) const;
  std::string text(std::string_view key, std::string fallback) const;

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    throw_error(ErrorCode::invalid_file, "{}: {}", context_,
                fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  int64_t integer_in(std::string_view key, const nlohmann::json& v, int64_t lo, int64_t hi,
                     const char* what) const;
  const nlohmann::json& obj_;
  std::string context_;
};

// Shared by the families (config.cpp).
RopeConfig read_rope(const ConfigFields& f, double default_partial_rotary_factor);
// The layer list's length must match num_hidden_layers when both are present; `list_name` names the list.
void check_layer_count(const ConfigFields& f, std::string_view list_name, size_t entries);

// One parser per family (config_families.cpp). `f` reads the text settings; `top` the file's top-level object
// (the same object unless settings are nested under "text_config").
void parse_nemotron_h(const ConfigFields& f, ModelConfig& cfg);
void parse_qwen3_5(const ConfigFields& f, const ConfigFields& top, bool moe, ModelConfig& cfg);
void parse_qwen3(const ConfigFields& f, ModelConfig& cfg);
void parse_llama(const ConfigFields& f, ModelConfig& cfg);

}  // namespace keel::config_detail
