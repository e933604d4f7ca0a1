#include "tokenizer/json_fields.h"

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace keel::tokenizer {

std::string json_preview(const json& j) {
  if (j.is_object()) return fmt::format("an object of {} fields", j.size());
  if (j.is_array()) return fmt::format("an array of {} values", j.size());
  std::string s = j.dump();
  return s.size() > 80 ? s.substr(0, 80) + "..." : s;
}

void check_nesting(int depth, const std::string& where) {
  if (depth > kMaxSequenceDepth)
    throw_error(ErrorCode::invalid_file, "{}: Sequence nested more than {} deep", where.substr(0, 200),
                kMaxSequenceDepth);
}

const json& json_required(const json& obj, std::string_view key, const std::string& where) {
  if (!obj.is_object())
    throw_error(ErrorCode::invalid_file, "{}: expected an object, got {}", where, json_preview(obj));
  auto it = obj.find(key);
  if (it == obj.end()) throw_error(ErrorCode::invalid_file, "{}: missing field \"{}\"", where, key);
  return *it;
}

std::string json_type(const json& obj, const std::string& where) {
  const json& t = json_required(obj, "type", where);
  if (!t.is_string())
    throw_error(ErrorCode::invalid_file, "{}.type: expected a string, got {}", where, json_preview(t));
  return t.get<std::string>();
}

bool json_bool(const json& obj, std::string_view key, bool fallback, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean())
    throw_error(ErrorCode::invalid_file, "{}.{}: expected true or false, got {}", where, key,
                json_preview(*it));
  return it->get<bool>();
}

int64_t json_int(const json& obj, std::string_view key, int64_t fallback, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_number_integer())
    throw_error(ErrorCode::invalid_file, "{}.{}: expected an integer, got {}", where, key, json_preview(*it));
  return it->get<int64_t>();
}

std::string json_string(const json& obj, std::string_view key, const std::string& where) {
  const json& v = json_required(obj, key, where);
  if (!v.is_string())
    throw_error(ErrorCode::invalid_file, "{}.{}: expected a string, got {}", where, key, json_preview(v));
  return v.get<std::string>();
}

std::optional<std::string> json_optional_string(const json& obj, std::string_view key,
                                                const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_string())
    throw_error(ErrorCode::invalid_file, "{}.{}: expected a string or null, got {}", where, key,
                json_preview(*it));
  return it->get<std::string>();
}

char32_t json_char(const json& obj, std::string_view key, const std::string& where) {
  const std::string s = json_string(obj, key, where);
  size_t i = 0;
  const char32_t cp = s.empty() ? 0 : next_codepoint(s, i);
  if (s.empty() || i != s.size())
    throw_error(ErrorCode::invalid_file, "{}.{}: expected one character, got \"{}\"", where, key, s);
  return cp;
}

}  // namespace keel::tokenizer
