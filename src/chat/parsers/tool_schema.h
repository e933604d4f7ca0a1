// The parameter types of a request's tools, used to turn the text of an XML tool-call parameter
// (<parameter=P>\nVALUE\n</parameter>) into a typed JSON value.
#pragma once
#include <map>
#include <string>
#include <string_view>

#include "chat/messages.h"

namespace keel::chat {

// JSON Schema types a parameter may take, as a bit set.
enum ParamType : unsigned {
  param_string = 1u << 0,
  param_integer = 1u << 1,
  param_number = 1u << 2,
  param_boolean = 1u << 3,
  param_object = 1u << 4,
  param_array = 1u << 5,
  param_null = 1u << 6,
};

// The types of one parameter's schema: "type" (a name or a list of names), the members of "anyOf"/"oneOf",
// the JSON types of "enum" values or of "const". Non-standard names are mapped as vLLM's qwen3coder parser
// maps them (int*/uint*/long*/short* → integer, float*/num* → number, bool* → boolean, dict* → object,
// list*/arr* → array, str*/text/char/varchar/enum → string). 0 when the schema says nothing about types.
unsigned param_types_of_schema(const Json& schema);

// Converts a parameter's text (already stripped of the one newline after <parameter=P> and before
// </parameter>) to JSON, given the parameter's types (0 = unknown):
//   - "null" or "None" → null when null is allowed;
//   - string only → the text unchanged;
//   - otherwise the text parsed as JSON if that gives an allowed type (any number counts for integer and
//   number;
//     True/False are accepted for boolean); else the text as a string when string is allowed; else the parsed
//     value whatever its type; else (not JSON) the text as a string;
//   - unknown types → the text parsed as JSON, or the text as a string when it is not JSON.
Json convert_param_value(std::string_view text, unsigned types);

// The request's tools ([{"type": "function", "function": {"name", "parameters"}}, ...]), indexed by function
// name. Malformed entries are skipped: a tool the model calls but the request does not describe gets unknown
// parameter types.
class ToolSchemas {
 public:
  ToolSchemas() = default;
  explicit ToolSchemas(const Json& request_tools);

  // Types of parameter `param` of function `function`; 0 when unknown.
  unsigned param_types(std::string_view function, std::string_view param) const;

 private:
  std::map<std::string, Json, std::less<>>
      properties_;  // function name → "properties" object of its parameters
};

}  // namespace keel::chat
