#include "chat/jinja/value.h"

#include <cmath>

#include "chat/jinja/budget.h"
#include "chat/jinja/errors.h"
#include "chat/jinja/pystr.h"

namespace keel::chat::jinja {
namespace {

int checked_depth(int child_max) {
  int depth = child_max + 1;
  if (depth > kMaxValueDepth) {
    raise_error("RecursionError", "containers nest more than {} levels deep", kMaxValueDepth);
  }
  return depth;
}

bool hashable(const Value& v) {
  if (v.is_dict()) return false;
  if (!v.is_list()) return true;
  switch (v.flavor()) {
    case ListFlavor::tuple:
      for (const auto& item : v.items()) {
        if (!hashable(item)) return false;
      }
      return true;
    case ListFlavor::range:
    case ListFlavor::generator:
      return true;
    default:
      return false;
  }
}

// int == float compared exactly, as Python does.
bool int_equals_float(int64_t i, double d) {
  if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) >= 9.2233720368547758e18) return false;
  return static_cast<int64_t>(d) == i;
}

bool numbers_equal(const Value& a, const Value& b) {
  if (a.is_float() && b.is_float()) return a.as_float() == b.as_float();
  if (a.is_float()) return int_equals_float(b.int_value(), a.as_float());
  if (b.is_float()) return int_equals_float(a.int_value(), b.as_float());
  return a.int_value() == b.int_value();
}

// dict_keys / dict_items compare as sets.
bool set_equal(const std::vector<Value>& a, const std::vector<Value>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& x : a) {
    bool found = false;
    for (const auto& y : b) {
      if (equals(x, y)) {
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  return true;
}

}  // namespace

size_t hash_value(const Value& v) {
  switch (v.kind()) {
    case Kind::undefined:
      return 0x5bd1e995;
    case Kind::none:
      return 0x27d4eb2f;
    case Kind::string:
      return std::hash<std::string>()(v.str());
    case Kind::boolean:
    case Kind::integer:
      return std::hash<int64_t>()(v.int_value());
    case Kind::floating: {
      double d = v.as_float();
      // Integral floats hash as the int they equal (1.0 == 1).
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2233720368547758e18) {
        return std::hash<int64_t>()(static_cast<int64_t>(d));
      }
      return std::hash<double>()(d);
    }
    case Kind::list:
      if (!hashable(v)) break;
      if (v.flavor() == ListFlavor::tuple || v.flavor() == ListFlavor::range) {
        size_t h = 0x345678;
        for (const auto& item : v.items()) h = h * 1000003 ^ hash_value(item);
        return h;
      }
      return std::hash<const void*>()(v.identity());
    case Kind::dict:
      break;
    default:
      return std::hash<const void*>()(v.identity());
  }
  type_error("unhashable type: '{}'", type_name(v));
}

const Value* Dict::find(std::string_view key) const {
  auto range = index_.equal_range(std::hash<std::string_view>()(key));
  for (auto it = range.first; it != range.second; ++it) {
    const auto& [k, v] = entries_[it->second];
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

const Value* Dict::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.str()));
  auto range = index_.equal_range(hash_value(key));
  for (auto it = range.first; it != range.second; ++it) {
    const auto& [k, v] = entries_[it->second];
    if (equals(k, key)) return &v;
  }
  return nullptr;
}

void Dict::set(Value key, Value value) {
  size_t h = hash_value(key);  // TypeError for an unhashable key
  depth = std::max(depth, checked_depth(std::max(key.depth(), value.depth())));
  auto range = index_.equal_range(h);
  for (auto it = range.first; it != range.second; ++it) {
    auto& entry = entries_[it->second];
    if (equals(entry.first, key)) {
      entry.second = std::move(value);  // Python keeps the first key object and its position
      return;
    }
  }
  index_.emplace(h, entries_.size());
  entries_.emplace_back(std::move(key), std::move(value));
  if (auto* budget = current_budget()) budget->charge_steps(1);
}

Value Object::call(Interpreter&, CallArgs&) {
  type_error("'{}' object is not callable", type_name());
}

Value Value::undefined(std::string message, bool security) {
  Value v;
  v.v_ = Undef{std::make_shared<const UndefinedData>(UndefinedData{std::move(message), security})};
  return v;
}

const UndefinedData& Value::undefined_data() const {
  static const UndefinedData kPlain{"undefined value", false};
  const auto& d = std::get<Undef>(v_).data;
  return d ? *d : kPlain;
}

Value Value::string(std::string s, bool markup) {
  if (auto* budget = current_budget()) budget->check_string(s.size());
  return Value(Rep(std::make_shared<const std::string>(std::move(s))), markup);
}

Value Value::list(std::vector<Value> items, ListFlavor flavor, const char* repr) {
  if (auto* budget = current_budget()) budget->check_list(items.size());
  int child = 0;
  for (const auto& item : items) child = std::max(child, item.depth());
  auto data = std::make_shared<ListData>();
  data->depth = checked_depth(child);
  data->items = std::move(items);
  data->flavor = flavor;
  data->repr = repr;
  return Value(Rep(std::shared_ptr<const ListData>(std::move(data))));
}

Value Value::range(int64_t start, int64_t stop, int64_t step) {
  std::vector<Value> items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) items.push_back(Value::integer(i));
  if (auto* budget = current_budget()) budget->check_list(items.size());
  auto data = std::make_shared<ListData>();
  data->items = std::move(items);
  data->flavor = ListFlavor::range;
  data->range_start = start;
  data->range_stop = stop;
  data->range_step = step;
  return Value(Rep(std::shared_ptr<const ListData>(std::move(data))));
}

Value Value::dict(Dict d) {
  return Value(Rep(std::make_shared<const Dict>(std::move(d))));
}

Value Value::callable(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn, bool is_macro) {
  return Value(Rep(std::make_shared<const Callable>(Callable{std::move(name), is_macro, std::move(fn)})));
}

const void* Value::identity() const {
  switch (kind()) {
    case Kind::string:
      return std::get<StrPtr>(v_).get();
    case Kind::list:
      return std::get<std::shared_ptr<const ListData>>(v_).get();
    case Kind::dict:
      return std::get<std::shared_ptr<const Dict>>(v_).get();
    case Kind::callable:
      return std::get<std::shared_ptr<const Callable>>(v_).get();
    case Kind::object:
      return std::get<std::shared_ptr<Object>>(v_).get();
    default:
      return nullptr;
  }
}

int Value::depth() const {
  if (is_list()) return list_data().depth;
  if (is_dict()) return dict_data().depth;
  return 0;
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::undefined:
    case Kind::none:
      return false;
    case Kind::boolean:
      return v.as_bool();
    case Kind::integer:
      return v.as_int() != 0;
    case Kind::floating:
      return v.as_float() != 0.0;
    case Kind::string:
      return !v.str().empty();
    case Kind::list:
      return v.flavor() == ListFlavor::generator || !v.items().empty();
    case Kind::dict:
      return v.dict_data().size() != 0;
    case Kind::callable:
    case Kind::object:
      return true;
  }
  return false;
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Kind::undefined:
      return "Undefined";
    case Kind::none:
      return "NoneType";
    case Kind::boolean:
      return "bool";
    case Kind::integer:
      return "int";
    case Kind::floating:
      return "float";
    case Kind::string:
      return v.is_markup() ? "Markup" : "str";
    case Kind::list:
      switch (v.flavor()) {
        case ListFlavor::list:
          return "list";
        case ListFlavor::tuple:
          return "tuple";
        case ListFlavor::range:
          return "range";
        case ListFlavor::dict_keys:
          return "dict_keys";
        case ListFlavor::dict_values:
          return "dict_values";
        case ListFlavor::dict_items:
          return "dict_items";
        case ListFlavor::generator:
          return "generator";
      }
      return "list";
    case Kind::dict:
      return "dict";
    case Kind::callable:
      return v.callable_data().is_macro ? "Macro" : "builtin_function_or_method";
    case Kind::object:
      return v.object_ptr()->type_name();
  }
  return "object";
}

std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  if (v.is_markup()) return "markupsafe.Markup object";
  if (v.is_callable() && v.callable_data().is_macro) return "jinja2.runtime.Macro object";
  if (v.is_object()) {
    std::string name = v.object_ptr()->type_name();
    return (name == "Namespace" || name == "Cycler" || name == "Joiner" ? "jinja2.utils."
                                                                        : "jinja2.runtime.") +
           name + " object";
  }
  return type_name(v) + " object";
}

Value undefined_attribute(const Value& obj, std::string_view name) {
  return Value::undefined(
      fmt::format("{} has no attribute {}", pystr::repr(object_type_repr(obj)), pystr::repr(name)));
}

Value undefined_element(const Value& obj, const Value& key) {
  if (key.is_string()) return undefined_attribute(obj, key.str());
  return Value::undefined(fmt::format("{} has no element {}", object_type_repr(obj), repr(key)));
}

Value undefined_name(std::string_view name) {
  return Value::undefined(fmt::format("{} is undefined", pystr::repr(name)));
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return numbers_equal(a, b);
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::undefined:
    case Kind::none:
      return true;
    case Kind::string:
      return a.str() == b.str();
    case Kind::list: {
      if (auto* budget = current_budget()) budget->charge_steps(static_cast<int64_t>(a.items().size()));
      ListFlavor fa = a.flavor(), fb = b.flavor();
      if (fa != fb) return false;
      if (fa == ListFlavor::generator || fa == ListFlavor::dict_values) return a.identity() == b.identity();
      if (fa == ListFlavor::dict_keys || fa == ListFlavor::dict_items) return set_equal(a.items(), b.items());
      const auto& x = a.items();
      const auto& y = b.items();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!equals(x[i], y[i])) return false;
      }
      return true;
    }
    case Kind::dict: {
      const Dict& x = a.dict_data();
      const Dict& y = b.dict_data();
      if (auto* budget = current_budget()) budget->charge_steps(static_cast<int64_t>(x.size()));
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.entries()) {
        const Value* other = y.find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

}  // namespace keel::chat::jinja
