// Typed reads of tokenizer.json fields that fail with Error(invalid_file) naming the file and the field.
// `where` is the path of the object being read, file first: "models/x/tokenizer.json: pre_tokenizer".
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace keel::tokenizer {

using json = nlohmann::json;

// Sequence normalizers / pre-tokenizers / decoders / post-processors nest at most this deep.
constexpr int kMaxSequenceDepth = 32;
void check_nesting(int depth, const std::string& where);

// A short rendering of a value for error messages (never recurses into nested values).
std::string json_preview(const json& j);
// The object's "type" field (required).
std::string json_type(const json& obj, const std::string& where);
const json& json_required(const json& obj, std::string_view key, const std::string& where);
bool json_bool(const json& obj, std::string_view key, bool fallback, const std::string& where);
int64_t json_int(const json& obj, std::string_view key, int64_t fallback, const std::string& where);
std::string json_string(const json& obj, std::string_view key, const std::string& where);  // required
// Absent or null → nullopt.
std::optional<std::string> json_optional_string(const json& obj, std::string_view key,
                                                const std::string& where);
// The single character of a string field (Metaspace's replacement, Strip's content).
char32_t json_char(const json& obj, std::string_view key, const std::string& where);

}  // namespace keel::tokenizer
