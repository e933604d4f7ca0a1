// What a template can call without defining it: jinja2's filters and tests, the globals (range, dict,
// namespace, cycler, joiner, and transformers' raise_exception and strftime_now), and the Python methods of
// str, dict and list values that the sandbox allows.
#pragma once
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja/interpreter.h"
#include "chat/jinja/value.h"

namespace keel::chat::jinja {

using FilterFn = Value (*)(Interpreter&, const Value& input, CallArgs& args);
using TestFn = bool (*)(Interpreter&, const Value& input, CallArgs& args);
FilterFn find_filter(std::string_view name);  // nullptr when jinja2 has no such filter
TestFn find_test(std::string_view name);

// The globals, as the outermost frame's variables.
void add_globals(Frame& frame);

// `obj.name` when obj is a str, dict, list or tuple and `name` is one of its Python methods: the bound
// method, or an Undefined that raises SecurityError when used (list.append and the other mutating methods).
// nullopt: no such method.
std::optional<Value> builtin_attribute(const Value& obj, std::string_view name);

// markupsafe.escape: & < > " ' as HTML entities.
std::string html_escape(std::string_view s);

// Python's `fmt % args` and `fmt.format(*args, **kwargs)` for str.
Value percent_format(const Value& fmt, const Value& args);
Value str_format(const Value& fmt, CallArgs& args);

// Python argument binding for a builtin with parameters `names` (after the input value): positional then
// keyword, with Python's errors for too many, unknown or repeated arguments.
class ArgReader {
 public:
  ArgReader(CallArgs& args, std::string_view function, std::initializer_list<const char*> names);
  const Value* get(size_t i) const { return bound_[i] ? &*bound_[i] : nullptr; }
  Value get_or(size_t i, Value fallback) const { return bound_[i] ? *bound_[i] : std::move(fallback); }
  bool has(size_t i) const { return bound_[i].has_value(); }

 private:
  std::vector<std::optional<Value>> bound_;
};

// jinja2's Namespace: the one mutable object a template can make (`{% set ns.x = 1 %}`).
class Namespace : public Object {
 public:
  std::string type_name() const override { return "Namespace"; }
  std::optional<Value> get_attr(std::string_view name) const override;
  std::string repr() const override;
  bool is_namespace() const override { return true; }
  void clear_references() override;
  void set(const std::string& name, Value value);

 private:
  Dict attrs_;
};

// Python's str(x) of any value for filters that stringify (jinja2's soft_str); keeps Markup.
Value to_string_value(const Value& v);

// jinja2's make_attrgetter: "a.b.0" looked up item by item (an all-digit part is an integer index).
Value lookup_attribute_path(const Value& obj, const std::string& path);

}  // namespace keel::chat::jinja
