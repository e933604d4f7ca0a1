// Pieces of the JSON tool-call syntaxes (Hermes <tool_call>{...}</tool_call>, Nemotron
// <TOOLCALL>[...]</TOOLCALL>): finding where the model's JSON value ends in a stream, and reading calls out
// of it.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "chat/messages.h"

namespace keel::chat {

// Compact JSON text of `value`; invalid UTF-8 inside strings becomes U+FFFD instead of throwing.
std::string dump_json(const Json& value);

// Finds where a JSON value that starts with '{' or '[' ends, tracking only strings and nesting: the text is
// checked by a real JSON parse afterwards. Resumable: call scan() again with the same text grown at the end.
class JsonExtentScanner {
 public:
  enum class Status {
    incomplete,   // more text needed
    complete,     // the value ends at `pos` (one past its closing bracket)
    interrupted,  // `stop` occurs outside any string at `pos` before the value closed
  };
  struct Result {
    Status status;
    size_t pos;
  };

  // `text` starts at the value's first character; `stop` is the end marker of the enclosing block.
  Result scan(std::string_view text, std::string_view stop);
  void reset() { *this = JsonExtentScanner(); }

 private:
  size_t pos_ = 0;  // bytes of `text` already scanned
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
};

// One call read from the model's JSON: the function name and its arguments as JSON text.
struct JsonToolCall {
  std::string name;
  std::string arguments;
};

// Reads calls from a JSON value: an object {"name": "...", "arguments": {...}} (or "parameters" for
// arguments; a missing arguments field means {}; arguments given as a string that holds a JSON object are
// decoded once, any other string stays a JSON string), or an array of such objects. Returns false, leaving
// `out` empty, when the text is not valid JSON, not of that shape, or an empty array.
bool read_json_tool_calls(std::string_view json_text, std::vector<JsonToolCall>& out);

}  // namespace keel::chat
