#include "chat/parsers/json_tool_calls.h"

#include <optional>

#include "core/json_depth.h"

namespace keel::chat {

std::string dump_json(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

JsonExtentScanner::Result JsonExtentScanner::scan(std::string_view text, std::string_view stop) {
  for (; pos_ < text.size(); ++pos_) {
    char c = text[pos_];
    if (in_string_) {
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ <= 0) return {Status::complete, ++pos_};
    } else if (!stop.empty() && c == stop.front()) {
      std::string_view rest = text.substr(pos_);
      if (rest.starts_with(stop)) return {Status::interrupted, pos_};
      if (stop.starts_with(rest)) return {Status::incomplete, pos_};  // maybe the marker: wait for more text
    }
  }
  return {Status::incomplete, pos_};
}

namespace {

std::optional<JsonToolCall> read_call(const Json& call) {
  if (!call.is_object()) return std::nullopt;
  auto name = call.find("name");
  if (name == call.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
    return std::nullopt;
  auto args = call.find("arguments");
  if (args == call.end()) args = call.find("parameters");
  Json arguments = args == call.end() ? Json::object() : *args;
  if (arguments.is_string()) {
    // Models trained on templates that print arguments with tojson sometimes emit them already serialized.
    const std::string& s = arguments.get_ref<const std::string&>();
    Json decoded = json_too_deep(s) ? Json(Json::value_t::discarded)
                                    : Json::parse(s, nullptr, /*allow_exceptions=*/false);
    if (!decoded.is_discarded() && decoded.is_object()) arguments = std::move(decoded);
  }
  return JsonToolCall{name->get<std::string>(), dump_json(arguments)};
}

}  // namespace

bool read_json_tool_calls(std::string_view json_text, std::vector<JsonToolCall>& out) {
  out.clear();
  if (json_too_deep(json_text)) return false;
  Json value = Json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return false;
  if (value.is_object()) {
    auto call = read_call(value);
    if (!call) return false;
    out.push_back(std::move(*call));
    return true;
  }
  if (!value.is_array() || value.empty()) return false;
  for (const Json& element : value) {
    auto call = read_call(element);
    if (!call) {
      out.clear();
      return false;
    }
    out.push_back(std::move(*call));
  }
  return true;
}

}  // namespace keel::chat
