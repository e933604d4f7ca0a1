#include "chat/parsers/tool_schema.h"

#include <algorithm>
#include <cctype>

#include "core/json_depth.h"

namespace keel::chat {

namespace {

unsigned type_of_name(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  auto starts = [&](const char* prefix) { return name.starts_with(prefix); };
  if (name == "null") return param_null;
  if (starts("int") || starts("uint") || starts("long") || starts("short") || starts("unsigned")) {
    return param_integer;
  }
  if (starts("num") || starts("float") || starts("double")) return param_number;
  if (starts("bool")) return param_boolean;
  if (name == "object" || starts("dict")) return param_object;
  if (starts("arr") || starts("list")) return param_array;
  if (starts("str") || name == "text" || name == "char" || name == "varchar" || name == "enum")
    return param_string;
  return 0;
}

unsigned type_of_value(const Json& v) {
  switch (v.type()) {
    case Json::value_t::string:
      return param_string;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return param_integer;
    case Json::value_t::number_float:
      return param_number;
    case Json::value_t::boolean:
      return param_boolean;
    case Json::value_t::object:
      return param_object;
    case Json::value_t::array:
      return param_array;
    case Json::value_t::null:
      return param_null;
    default:
      return 0;
  }
}

bool allowed(const Json& value, unsigned types) {
  unsigned t = type_of_value(value);
  if (t == param_integer || t == param_number) return (types & (param_integer | param_number)) != 0;
  return (t & types) != 0;
}

bool try_parse(std::string_view text, Json& out) {
  if (json_too_deep(text)) return false;
  out = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  return !out.is_discarded();
}

}  // namespace

unsigned param_types_of_schema(const Json& schema) {
  if (!schema.is_object()) return 0;
  unsigned types = 0;
  if (auto it = schema.find("type"); it != schema.end()) {
    if (it->is_string()) types |= type_of_name(it->get<std::string>());
    if (it->is_array()) {
      for (const Json& t : *it) {
        if (t.is_string()) types |= type_of_name(t.get<std::string>());
      }
    }
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (auto it = schema.find(key); it != schema.end() && it->is_array()) {
      for (const Json& member : *it) types |= param_types_of_schema(member);
    }
  }
  if (types == 0) {
    if (auto it = schema.find("enum"); it != schema.end() && it->is_array()) {
      for (const Json& v : *it) types |= type_of_value(v);
    }
    if (auto it = schema.find("const"); it != schema.end()) types |= type_of_value(*it);
  }
  return types;
}

Json convert_param_value(std::string_view text, unsigned types) {
  Json parsed;
  if (types == 0) return try_parse(text, parsed) ? parsed : Json(std::string(text));
  if ((types & param_null) && (text == "null" || text == "None")) return nullptr;
  if ((types & ~param_null) == param_string) return std::string(text);
  if (types & param_boolean) {
    if (text == "True") return true;
    if (text == "False") return false;
  }
  bool is_json = try_parse(text, parsed);
  if (is_json && allowed(parsed, types)) return parsed;
  if (types & param_string) return std::string(text);
  return is_json ? parsed : Json(std::string(text));
}

ToolSchemas::ToolSchemas(const Json& request_tools) {
  if (!request_tools.is_array()) return;
  for (const Json& tool : request_tools) {
    if (!tool.is_object()) continue;
    auto fn = tool.find("function");
    if (fn == tool.end() || !fn->is_object()) continue;
    auto name = fn->find("name");
    if (name == fn->end() || !name->is_string()) continue;
    Json properties = Json::object();
    if (auto params = fn->find("parameters"); params != fn->end() && params->is_object()) {
      if (auto props = params->find("properties"); props != params->end() && props->is_object()) {
        properties = *props;
      }
    }
    properties_[name->get<std::string>()] = std::move(properties);
  }
}

unsigned ToolSchemas::param_types(std::string_view function, std::string_view param) const {
  auto fn = properties_.find(function);
  if (fn == properties_.end()) return 0;
  auto it = fn->second.find(std::string(param));
  return it == fn->second.end() ? 0 : param_types_of_schema(*it);
}

}  // namespace keel::chat
