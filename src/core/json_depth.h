// A pre-parse bound on JSON nesting, for every JSON text keel parses (request bodies, strings inside them,
// model files, model output). nlohmann's parser is iterative, but its copies, dumps and comparisons recurse,
// and so does every walk keel does over a parsed value (the template context, the output parsers): a value
// nested 300,000 deep overflows the stack there. Checking the text first bounds all of them at once.
#pragma once
#include <cstddef>
#include <string_view>

namespace keel {

// Nesting deeper than this is refused in every JSON text keel parses (the request body's limit since the
// start; a string parsed out of a body sits inside it, so its own depth is bounded the same way).
inline constexpr int kMaxJsonDepth = 256;

// The byte offset of the first '[' or '{' (outside strings) that opens a level deeper than `max_depth`, or
// npos when there is none. Only strings and brackets are tracked: the text need not be valid JSON.
inline size_t json_too_deep_at(std::string_view text, int max_depth = kMaxJsonDepth) {
  int depth = 0;
  bool in_string = false, escape = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escape)
        escape = false;
      else if (c == '\\')
        escape = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) return i;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return std::string_view::npos;
}

inline bool json_too_deep(std::string_view text, int max_depth = kMaxJsonDepth) {
  return json_too_deep_at(text, max_depth) != std::string_view::npos;
}

}  // namespace keel
