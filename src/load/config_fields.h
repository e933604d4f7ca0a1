// The generic pieces of reading config.json that every family's reader (src/models/<type>.cpp) uses: typed
// reads of one JSON object whose errors name the file, the family and the field, and the settings several
// families share (token ids, eps, attention heads, RoPE).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "load/config.h"
#include "load/json_util.h"

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

// Token ids, eps, context and tying: every family has them, with its own defaults.
struct CommonDefaults {
  std::string_view eps_key = "rms_norm_eps";
  double eps = 1e-6;
  int64_t max_position_embeddings = 32768;
  std::optional<int64_t> bos, pad;
  std::vector<int64_t> eos;
};
// hidden_size, vocab_size (required), max_position_embeddings, eps, tie_word_embeddings and the token ids. An
// explicit null token id means "no such token", not the family's default.
void read_common(const ConfigFields& f, const CommonDefaults& d, ModelConfig& cfg);
// `key` (which must be present) as a list of strings.
std::vector<std::string> string_list(const ConfigFields& f, std::string_view key);
// num_attention_heads (required), num_key_value_heads, head_dim (read at `head_dim_key`), attention_bias. An
// explicit null num_key_value_heads means "as many as the query heads" in every family; an absent one takes
// `default_kv_heads`.
void read_attention(const ConfigFields& f, int64_t default_kv_heads, std::string_view head_dim_key,
                    int64_t default_head_dim, AttentionConfig& a);
// transformers' RotaryEmbeddingConfigMixin (rope_scaling / rope_parameters / top-level rope_theta).
RopeConfig read_rope(const ConfigFields& f, double default_partial_rotary_factor);
// The layer list's length must match num_hidden_layers when both are present; `list_name` names the list.
void check_layer_count(const ConfigFields& f, std::string_view list_name, size_t entries);

}  // namespace keel::config_detail
