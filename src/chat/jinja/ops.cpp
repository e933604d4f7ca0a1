#include "chat/jinja/ops.h"

#include <cmath>

#include "chat/jinja/builtins.h"
#include "chat/jinja/errors.h"
#include "chat/jinja/pystr.h"

namespace keel::chat::jinja {
namespace {

using ast::BinaryOp;
using ast::CompareOp;

const char* op_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::add:
      return "+";
    case BinaryOp::sub:
      return "-";
    case BinaryOp::mul:
      return "*";
    case BinaryOp::div:
      return "/";
    case BinaryOp::floordiv:
      return "//";
    case BinaryOp::mod:
      return "%";
    case BinaryOp::pow:
      return "** or pow()";
    default:
      return "?";
  }
}

[[noreturn]] void unsupported_operands(BinaryOp op, const Value& a, const Value& b) {
  type_error("unsupported operand type(s) for {}: '{}' and '{}'", op_symbol(op), type_name(a), type_name(b));
}

[[noreturn]] void overflow() {
  raise_error("OverflowError", "integer result does not fit in 64 bits (keel's integers are 64-bit)");
}

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}
int64_t checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) overflow();
  return r;
}
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}

int64_t int_pow(int64_t base, int64_t exp) {
  int64_t result = 1, b = base;
  while (exp > 0) {
    if (exp & 1) result = checked_mul(result, b);
    exp >>= 1;
    if (exp) b = checked_mul(b, b);
  }
  return result;
}

double float_floordiv(double vx, double wx) {
  double mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0.0) {
    if ((wx < 0) != (mod < 0)) div -= 1.0;
  }
  if (div != 0.0) {
    double floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
    return floordiv;
  }
  return std::copysign(0.0, vx / wx);
}

double float_mod(double vx, double wx) {
  double mod = std::fmod(vx, wx);
  if (mod != 0.0) {
    if ((wx < 0) != (mod < 0)) mod += wx;
  } else {
    mod = std::copysign(0.0, wx);
  }
  return mod;
}

Value repeat(const Value& seq, const Value& count) {
  int64_t n = std::max<int64_t>(0, count.int_value());
  if (seq.is_string()) {
    const std::string& s = seq.str();
    if (n > 0 && !s.empty()) {
      if (auto* budget = current_budget())
        budget->check_string(s.size() * static_cast<size_t>(std::min<int64_t>(n, INT32_MAX)));
    }
    std::string out;
    if (!s.empty()) {
      out.reserve(s.size() * static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) out += s;
    }
    return string_like(seq, std::move(out));
  }
  const auto& items = seq.items();
  if (n > 0 && !items.empty()) {
    if (auto* budget = current_budget())
      budget->check_list(items.size() * static_cast<size_t>(std::min<int64_t>(n, INT32_MAX)));
  }
  std::vector<Value> out;
  for (int64_t i = 0; i < n && !items.empty(); ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.flavor());
}

bool is_sequence_for_concat(const Value& v) {
  return v.is_list() && (v.flavor() == ListFlavor::list || v.flavor() == ListFlavor::tuple);
}

int compare_numbers(const Value& a, const Value& b) {
  long double x =
      a.is_float() ? static_cast<long double>(a.as_float()) : static_cast<long double>(a.int_value());
  long double y =
      b.is_float() ? static_cast<long double>(b.as_float()) : static_cast<long double>(b.int_value());
  return x < y ? -1 : x > y ? 1 : 0;
}

bool subscriptable_list(const Value& v) {
  return v.is_list() && v.flavor() != ListFlavor::generator && v.flavor() != ListFlavor::dict_keys &&
         v.flavor() != ListFlavor::dict_values && v.flavor() != ListFlavor::dict_items;
}

// Python's PySlice_AdjustIndices: the adjusted start, stop and step of a slice over `len` items, and the
// indexes it visits.
struct SliceIndexes {
  int64_t start, stop, step;
  std::vector<int64_t> indexes;
};

SliceIndexes slice_indexes(int64_t len, const Value& start_v, const Value& stop_v, const Value& step_v) {
  auto as_index = [](const Value& v) -> std::optional<int64_t> {
    if (v.is_none()) return std::nullopt;
    if (v.is_int() || v.is_bool()) return v.int_value();
    type_error("slice indices must be integers or None or have an __index__ method");
  };
  int64_t step = as_index(step_v).value_or(1);
  if (step == 0) value_error("slice step cannot be zero");
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t i = *v;
    if (i < 0) {
      i += len;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= len) {
      i = step < 0 ? len - 1 : len;
    }
    return i;
  };
  int64_t start = adjust(as_index(start_v), step < 0 ? len - 1 : 0);
  int64_t stop = adjust(as_index(stop_v), step < 0 ? -1 : len);
  SliceIndexes out{start, stop, step, {}};
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.indexes.push_back(i);
  return out;
}

}  // namespace

Value string_like(const Value& like, std::string s) {
  return Value::string(std::move(s), like.is_markup());
}

void fail_undefined(const Value& undefined) {
  const UndefinedData& d = undefined.undefined_data();
  raise_error(d.security ? "SecurityError" : "UndefinedError", "{}", d.message);
}

Value arithmetic(BinaryOp op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (op == BinaryOp::mod && a.is_string())
    return percent_format(a, b);  // str % Undefined formats (as a mapping)
  if (b.is_undefined()) fail_undefined(b);
  bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
  bool numbers = a.is_number() && b.is_number();
  switch (op) {
    case BinaryOp::add:
      if (ints) return Value::integer(checked_add(a.int_value(), b.int_value()));
      if (numbers) return Value::floating(a.number_value() + b.number_value());
      if (a.is_string() && b.is_string()) {
        if (a.is_markup() && !b.is_markup()) return Value::string(a.str() + html_escape(b.str()), true);
        if (b.is_markup() && !a.is_markup()) return Value::string(html_escape(a.str()) + b.str(), true);
        return Value::string(a.str() + b.str(), a.is_markup());
      }
      if (a.is_string()) type_error("can only concatenate str (not \"{}\") to str", type_name(b));
      if (is_sequence_for_concat(a) && b.is_list() && a.flavor() == b.flavor()) {
        std::vector<Value> items = a.items();
        items.insert(items.end(), b.items().begin(), b.items().end());
        return Value::list(std::move(items), a.flavor());
      }
      if (is_sequence_for_concat(a)) {
        type_error("can only concatenate {} (not \"{}\") to {}", type_name(a), type_name(b), type_name(a));
      }
      unsupported_operands(op, a, b);
    case BinaryOp::sub:
      if (ints) return Value::integer(checked_sub(a.int_value(), b.int_value()));
      if (numbers) return Value::floating(a.number_value() - b.number_value());
      unsupported_operands(op, a, b);
    case BinaryOp::mul:
      if (ints) return Value::integer(checked_mul(a.int_value(), b.int_value()));
      if (numbers) return Value::floating(a.number_value() * b.number_value());
      if ((a.is_string() || is_sequence_for_concat(a)) && (b.is_int() || b.is_bool())) return repeat(a, b);
      if ((b.is_string() || is_sequence_for_concat(b)) && (a.is_int() || a.is_bool())) return repeat(b, a);
      if (a.is_string() || is_sequence_for_concat(a)) {
        type_error("can't multiply sequence by non-int of type '{}'", type_name(b));
      }
      if (b.is_string() || is_sequence_for_concat(b)) {
        type_error("can't multiply sequence by non-int of type '{}'", type_name(a));
      }
      unsupported_operands(op, a, b);
    case BinaryOp::div:
      if (!numbers) unsupported_operands(op, a, b);
      if (b.number_value() == 0.0)
        raise_error("ZeroDivisionError", "{}", ints ? "division by zero" : "float division by zero");
      return Value::floating(a.number_value() / b.number_value());
    case BinaryOp::floordiv:
      if (!numbers) unsupported_operands(op, a, b);
      if (ints) {
        int64_t x = a.int_value(), y = b.int_value();
        if (y == 0) raise_error("ZeroDivisionError", "integer division or modulo by zero");
        if (x == INT64_MIN && y == -1) overflow();
        int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
        return Value::integer(q);
      }
      if (b.number_value() == 0.0) raise_error("ZeroDivisionError", "float floor division by zero");
      return Value::floating(float_floordiv(a.number_value(), b.number_value()));
    case BinaryOp::mod:
      if (a.is_string()) return percent_format(a, b);
      if (!numbers) unsupported_operands(op, a, b);
      if (ints) {
        int64_t x = a.int_value(), y = b.int_value();
        if (y == 0) raise_error("ZeroDivisionError", "integer division or modulo by zero");
        if (y == -1) return Value::integer(0);
        int64_t r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return Value::integer(r);
      }
      if (b.number_value() == 0.0) raise_error("ZeroDivisionError", "float modulo");
      return Value::floating(float_mod(a.number_value(), b.number_value()));
    case BinaryOp::pow: {
      if (!numbers) unsupported_operands(op, a, b);
      if (ints && b.int_value() >= 0) return Value::integer(int_pow(a.int_value(), b.int_value()));
      double x = a.number_value(), y = b.number_value();
      if (x == 0.0 && y < 0) raise_error("ZeroDivisionError", "0.0 cannot be raised to a negative power");
      if (x < 0 && y != std::floor(y))
        unsupported_error("a negative number to a fractional power is complex");
      double r = std::pow(x, y);
      if (std::isinf(r) && std::isfinite(x) && std::isfinite(y))
        raise_error("OverflowError", "(34, 'Numerical result out of range')");
      return Value::floating(r);
    }
    default:
      break;
  }
  unsupported_operands(op, a, b);
}

Value negate(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_float()) return Value::floating(-v.as_float());
  if (v.is_int() || v.is_bool()) return Value::integer(checked_sub(0, v.int_value()));
  type_error("bad operand type for unary -: '{}'", type_name(v));
}

Value unary_plus(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_float()) return v;
  if (v.is_int() || v.is_bool()) return Value::integer(v.int_value());
  type_error("bad operand type for unary +: '{}'", type_name(v));
}

int order(const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) return compare_numbers(a, b);
  if (a.is_string() && b.is_string()) {
    int c = a.str().compare(b.str());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (is_sequence_for_concat(a) && b.is_list() && a.flavor() == b.flavor()) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return order(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  type_error("'<' not supported between instances of '{}' and '{}'", type_name(a), type_name(b));
}

bool less_than(const Value& a, const Value& b) {
  return order(a, b) < 0;
}

bool compare(CompareOp op, const Value& a, const Value& b) {
  switch (op) {
    case CompareOp::eq:
      return equals(a, b);
    case CompareOp::ne:
      return !equals(a, b);
    case CompareOp::in:
      return contains(b, a);
    case CompareOp::notin:
      return !contains(b, a);
    default:
      break;
  }
  if (a.is_number() && b.is_number() &&
      ((a.is_float() && std::isnan(a.as_float())) || (b.is_float() && std::isnan(b.as_float())))) {
    return false;  // every ordering with NaN is false
  }
  int c;
  try {
    c = order(a, b);
  } catch (const TemplateError& e) {
    if (e.python_type() != "TypeError") throw;
    const char* sym = op == CompareOp::lt     ? "<"
                      : op == CompareOp::lteq ? "<="
                      : op == CompareOp::gt   ? ">"
                                              : ">=";
    type_error("'{}' not supported between instances of '{}' and '{}'", sym, type_name(a), type_name(b));
  }
  switch (op) {
    case CompareOp::lt:
      return c < 0;
    case CompareOp::lteq:
      return c <= 0;
    case CompareOp::gt:
      return c > 0;
    case CompareOp::gteq:
      return c >= 0;
    default:
      return false;
  }
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::string:
      if (!item.is_string())
        type_error("'in <string>' requires string as left operand, not {}", type_name(item));
      return container.str().find(item.str()) != std::string::npos;
    case Kind::list: {
      if (container.flavor() == ListFlavor::generator) {
        for (const auto& x : iterate(container)) {
          if (equals(x, item)) return true;
        }
        return false;
      }
      const auto& items = container.items();
      if (auto* budget = current_budget()) budget->charge_steps(static_cast<int64_t>(items.size()));
      for (const auto& x : items) {
        if (equals(x, item)) return true;
      }
      return false;
    }
    case Kind::dict:
      return container.dict_data().find(item) != nullptr;
    case Kind::undefined:
      return false;
    default:
      type_error("argument of type '{}' is not iterable", type_name(container));
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::list: {
      const ListData& d = v.list_data();
      if (d.flavor == ListFlavor::generator) {
        if (d.consumed) return {};
        d.consumed = true;
      }
      if (auto* budget = current_budget()) budget->charge_steps(static_cast<int64_t>(d.items.size() / 4));
      return d.items;
    }
    case Kind::dict: {
      std::vector<Value> keys;
      for (const auto& [k, val] : v.dict_data().entries()) keys.push_back(k);
      return keys;
    }
    case Kind::string: {
      std::vector<Value> chars;
      for (uint32_t cp : pystr::decode(v.str())) {
        std::string c;
        pystr::append_utf8(c, cp);
        chars.push_back(Value::string(std::move(c)));  // iterating a Markup gives plain str characters
      }
      return chars;
    }
    case Kind::undefined:
      return {};
    default:
      type_error("'{}' object is not iterable", type_name(v));
  }
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Kind::string:
      return static_cast<int64_t>(pystr::length(v.str()));
    case Kind::list:
      if (v.flavor() == ListFlavor::generator) break;
      return static_cast<int64_t>(v.items().size());
    case Kind::dict:
      return static_cast<int64_t>(v.dict_data().size());
    case Kind::undefined:
      return 0;
    default:
      break;
  }
  type_error("object of type '{}' has no len()", type_name(v));
}

Value get_attr(const Value& obj, std::string_view name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (name.size() >= 2 && name.substr(0, 2) == "__") {
    return Value::undefined(fmt::format("access to attribute {} of {} object is unsafe.", pystr::repr(name),
                                        pystr::repr(type_name(obj))),
                            true);
  }
  if (auto attr = builtin_attribute(obj, name)) return *attr;
  if (obj.is_object()) {
    if (auto attr = obj.object_ptr()->get_attr(name)) return *attr;
  }
  if (obj.is_dict()) {
    if (const Value* v = obj.dict_data().find(name)) return *v;
  }
  return undefined_attribute(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict()) {
    const Value* v = nullptr;
    try {
      v = obj.dict_data().find(key);
    } catch (const TemplateError&) {  // unhashable key: Python's TypeError, which the sandbox swallows
    }
    if (v) return *v;
  } else if ((subscriptable_list(obj) || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.int_value();
    if (obj.is_string()) {
      if (pystr::is_ascii(obj.str())) {
        int64_t n = static_cast<int64_t>(obj.str().size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return string_like(obj, std::string(1, obj.str()[static_cast<size_t>(i)]));
      } else {
        auto cps = pystr::decode(obj.str());
        int64_t n = static_cast<int64_t>(cps.size());
        if (i < 0) i += n;
        if (i >= 0 && i < n)
          return string_like(obj, pystr::encode(cps, static_cast<size_t>(i), static_cast<size_t>(i) + 1));
      }
    } else {
      const auto& items = obj.items();
      int64_t n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return items[static_cast<size_t>(i)];
    }
  }
  if (key.is_string()) {
    if (auto attr = builtin_attribute(obj, key.str())) return *attr;
    if (obj.is_object()) {
      if (auto attr = obj.object_ptr()->get_attr(key.str())) return *attr;
    }
  }
  return undefined_element(obj, key);
}

// jinja2 compiles x[a:b] to a plain Python subscript (no sandbox getitem), so every failure raises.
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict()) type_error("unhashable type: 'slice'");
  if (!obj.is_string() && !subscriptable_list(obj))
    type_error("'{}' object is not subscriptable", type_name(obj));
  SliceIndexes spec = slice_indexes(obj.is_string() ? static_cast<int64_t>(pystr::length(obj.str()))
                                                    : static_cast<int64_t>(obj.items().size()),
                                    start, stop, step);
  const std::vector<int64_t>& idx = spec.indexes;
  if (obj.is_list() && obj.flavor() == ListFlavor::range) {  // a slice of a range is a range
    const ListData& r = obj.list_data();
    return Value::range(r.range_start + spec.start * r.range_step, r.range_start + spec.stop * r.range_step,
                        r.range_step * spec.step);
  }
  if (obj.is_string()) {
    auto cps = pystr::decode(obj.str());
    std::string out;
    for (int64_t i : idx) pystr::append_utf8(out, cps[static_cast<size_t>(i)]);
    return string_like(obj, std::move(out));
  }
  std::vector<Value> out;
  out.reserve(idx.size());
  for (int64_t i : idx) out.push_back(obj.items()[static_cast<size_t>(i)]);
  ListFlavor flavor = obj.flavor() == ListFlavor::tuple ? ListFlavor::tuple : ListFlavor::list;
  return Value::list(std::move(out), flavor);
}

}  // namespace keel::chat::jinja
