#include "load/json_util.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "core/json_depth.h"
#include "core/text_file.h"

namespace keel {

namespace {

bool is_ident_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// Rewrites bare Infinity / -Infinity / NaN tokens outside strings; returns nullopt when there are none.
std::optional<std::string> rewrite_python_floats(std::string_view text) {
  static constexpr std::string_view kTokens[] = {"-Infinity", "Infinity", "NaN"};
  std::string out;
  bool changed = false;
  bool in_string = false;
  size_t copied = 0;  // text[0, copied) is already in `out`
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      continue;
    }
    if (c != '-' && c != 'I' && c != 'N') continue;
    if (i > 0 && is_ident_char(text[i - 1])) continue;
    for (std::string_view token : kTokens) {
      if (text.substr(i, token.size()) != token) continue;
      size_t end = i + token.size();
      if (end < text.size() && is_ident_char(text[end])) continue;
      out.append(text.substr(copied, i - copied));
      out.append(R"({"__float__": ")").append(token).append(R"("})");
      copied = end;
      i = end - 1;
      changed = true;
      break;
    }
  }
  if (!changed) return std::nullopt;
  out.append(text.substr(copied));
  return out;
}

}  // namespace

nlohmann::json parse_json_lenient(std::string_view text, std::string_view source) {
  std::optional<std::string> rewritten = rewrite_python_floats(text);
  std::string_view input = rewritten ? std::string_view(*rewritten) : text;
  if (size_t at = json_too_deep_at(input); at != std::string_view::npos)
    throw_error(ErrorCode::invalid_file, "{}: JSON nests deeper than {} levels (byte {})", source,
                kMaxJsonDepth, at);
  try {
    return nlohmann::json::parse(input.begin(), input.end());
  } catch (const nlohmann::json::exception& e) {
    throw_error(ErrorCode::invalid_file, "{}: invalid JSON: {}", source, e.what());
  }
}

std::optional<double> json_number(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_object() && v.size() == 1 && v.contains("__float__") && v["__float__"].is_string()) {
    const std::string& s = v["__float__"].get_ref<const std::string&>();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  }
  return std::nullopt;
}

std::optional<int64_t> json_integer(const nlohmann::json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    // 2^63 is exactly representable; anything at or above it does not fit.
    if (!std::isfinite(d) || d != std::floor(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0)
      return std::nullopt;
    return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

std::string read_text_file(const std::string& path, int64_t max_bytes) {
  return read_regular_file(path, max_bytes);
}

std::string clip_for_message(std::string_view s, size_t max_chars) {
  if (s.size() <= max_chars) return std::string(s);
  return std::string(s.substr(0, max_chars)) + "…";
}

}  // namespace keel
