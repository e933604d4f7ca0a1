// JSON in and out of the engine: request JSON (nlohmann ordered_json, key order kept) becomes Values, and
// transformers' `tojson` filter, which is Python's json.dumps(x, ensure_ascii=False, indent=...,
// separators=..., sort_keys=...): ", " and ": " separators by default (", " becomes "," with an indent),
// floats as Python's repr, non-ASCII kept, and TypeError for what JSON cannot hold (Undefined, macros,
// ranges...).
#pragma once
#include <optional>
#include <string>

#include "chat/jinja/value.h"
#include "chat/messages.h"

namespace keel::chat::jinja {

// Throws a RecursionError past kMaxValueDepth levels, and an OverflowError for integers beyond 64 bits.
Value from_json(const Json& j);

struct DumpOptions {
  std::optional<std::string> indent;  // the text of one indent level; nullopt: one line
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};
std::string dumps(const Value& v, const DumpOptions& options);

}  // namespace keel::chat::jinja
