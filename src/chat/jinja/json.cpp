#include "chat/jinja/json.h"

#include <algorithm>
#include <cmath>

#include "chat/jinja/budget.h"
#include "chat/jinja/errors.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/pystr.h"

namespace keel::chat::jinja {
namespace {

Value from_json_at(const Json& j, int depth) {
  if (depth > kMaxValueDepth)
    raise_error("RecursionError", "JSON nests more than {} levels deep", kMaxValueDepth);
  switch (j.type()) {
    case Json::value_t::null:
      return Value::none();
    case Json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case Json::value_t::number_integer:
      return Value::integer(j.get<int64_t>());
    case Json::value_t::number_unsigned: {
      auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX))
        raise_error("OverflowError", "integer {} does not fit in 64 bits", u);
      return Value::integer(static_cast<int64_t>(u));
    }
    case Json::value_t::number_float:
      return Value::floating(j.get<double>());
    case Json::value_t::string:
      return Value::string(j.get<std::string>());
    case Json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(from_json_at(item, depth + 1));
      return Value::list(std::move(items));
    }
    case Json::value_t::object: {
      Dict d;
      for (const auto& [k, v] : j.items()) d.set(Value::string(k), from_json_at(v, depth + 1));
      return Value::dict(std::move(d));
    }
    default:
      raise_error("TypeError", "unsupported JSON value");
  }
}

void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (uint32_t cp : pystr::decode(s)) {
    switch (cp) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (cp < 0x20) {
          out += fmt::format("\\u{:04x}", cp);
        } else if (ensure_ascii && cp >= 0x7F) {
          if (cp >= 0x10000) {
            uint32_t v = cp - 0x10000;
            out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
          } else {
            out += fmt::format("\\u{:04x}", cp);
          }
        } else {
          pystr::append_utf8(out, cp);
        }
    }
  }
  out += '"';
}

std::string float_text(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return pystr::float_repr(d);
}

class Dumper {
 public:
  explicit Dumper(const DumpOptions& o) : opt_(o) {}

  void dump(std::string& out, const Value& v, int level) {
    if (out.size() > size_limit_) current_budget()->check_string(out.size());
    switch (v.kind()) {
      case Kind::none:
        out += "null";
        return;
      case Kind::boolean:
        out += v.as_bool() ? "true" : "false";
        return;
      case Kind::integer:
        out += std::to_string(v.as_int());
        return;
      case Kind::floating:
        out += float_text(v.as_float());
        return;
      case Kind::string:
        append_json_string(out, v.str(), opt_.ensure_ascii);
        return;
      case Kind::list:
        if (v.flavor() == ListFlavor::list || v.flavor() == ListFlavor::tuple) {
          dump_list(out, v.items(), level);
          return;
        }
        break;
      case Kind::dict:
        dump_dict(out, v.dict_data(), level);
        return;
      default:
        break;
    }
    type_error("Object of type {} is not JSON serializable", type_name(v));
  }

 private:
  void newline(std::string& out, int level) {
    out += '\n';
    for (int i = 0; i < level; ++i) out += *opt_.indent;
  }

  void dump_list(std::string& out, const std::vector<Value>& items, int level) {
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += opt_.item_separator;
      if (opt_.indent) newline(out, level + 1);
      dump(out, items[i], level + 1);
    }
    if (opt_.indent) newline(out, level);
    out += ']';
  }

  std::string key_text(const Value& k) {
    switch (k.kind()) {
      case Kind::string:
        return k.str();
      case Kind::integer:
        return std::to_string(k.as_int());
      case Kind::floating:
        return float_text(k.as_float());
      case Kind::boolean:
        return k.as_bool() ? "true" : "false";
      case Kind::none:
        return "null";
      default:
        type_error("keys must be str, int, float, bool or None, not {}", type_name(k));
    }
  }

  void dump_dict(std::string& out, const Dict& d, int level) {
    if (d.size() == 0) {
      out += "{}";
      return;
    }
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& e : d.entries()) entries.push_back(&e);
    if (opt_.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto* a, const auto* b) { return less_than(a->first, b->first); });
    }
    out += '{';
    bool first = true;
    for (const auto* e : entries) {
      if (!first) out += opt_.item_separator;
      first = false;
      if (opt_.indent) newline(out, level + 1);
      append_json_string(out, key_text(e->first), opt_.ensure_ascii);
      out += opt_.key_separator;
      dump(out, e->second, level + 1);
    }
    if (opt_.indent) newline(out, level);
    out += '}';
  }

  const DumpOptions& opt_;
  size_t size_limit_ = current_budget() ? current_budget()->limits().max_output_bytes : SIZE_MAX;
};

}  // namespace

Value from_json(const Json& j) {
  return from_json_at(j, 1);
}

std::string dumps(const Value& v, const DumpOptions& options) {
  std::string out;
  Dumper(options).dump(out, v, 0);
  return out;
}

}  // namespace keel::chat::jinja
