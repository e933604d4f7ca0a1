// jinja2's built-in tests (jinja2/tests.py): `x is defined`, `x is string`, `x is divisibleby 3`...
#include <string_view>
#include <utility>

#include "chat/jinja/builtins.h"
#include "chat/jinja/errors.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/pystr.h"

namespace keel::chat::jinja {
namespace {

using Args = CallArgs;

// A test with no argument besides the value.
void no_args(Args& a, const char* name) {
  ArgReader(a, name, {});
}
Value one_arg(Args& a, const char* name) {
  ArgReader r(a, name, {"other"});
  if (!r.has(0)) type_error("{}() missing 1 required positional argument", name);
  return *r.get(0);
}

bool t_defined(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_defined"), !v.is_undefined();
}
bool t_undefined(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_undefined"), v.is_undefined();
}
bool t_none(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_none"), v.is_none();
}
bool t_boolean(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_boolean"), v.is_bool();
}
bool t_false(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_false"), v.is_bool() && !v.as_bool();
}
bool t_true(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_true"), v.is_bool() && v.as_bool();
}
bool t_integer(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_integer"), v.is_int();
}
bool t_float(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_float"), v.is_float();
}
bool t_number(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_number"), v.is_number();
}
bool t_string(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_string"), v.is_string();
}
bool t_mapping(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_mapping"), v.is_dict();
}
bool t_escaped(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_escaped"), v.is_markup();
}
bool t_lower(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_lower"), pystr::is_lower(to_str(v));
}
bool t_upper(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_upper"), pystr::is_upper(to_str(v));
}

// len(value) and value.__getitem__ both exist.
bool t_sequence(Interpreter&, const Value& v, Args& a) {
  no_args(a, "test_sequence");
  switch (v.kind()) {
    case Kind::string:
    case Kind::dict:
    case Kind::undefined:
      return true;
    case Kind::list:
      return v.flavor() == ListFlavor::list || v.flavor() == ListFlavor::tuple ||
             v.flavor() == ListFlavor::range;
    default:
      return false;
  }
}
// iter(value) works.
bool t_iterable(Interpreter&, const Value& v, Args& a) {
  no_args(a, "test_iterable");
  switch (v.kind()) {
    case Kind::string:
    case Kind::list:
    case Kind::dict:
    case Kind::undefined:
      return true;
    case Kind::object:
      return v.object_ptr()->type_name() == "LoopContext";
    default:
      return false;
  }
}
bool t_callable(Interpreter&, const Value& v, Args& a) {
  no_args(a, "test_callable");
  return v.is_callable() || v.is_undefined() || (v.is_object() && v.object_ptr()->is_callable());
}
bool t_sameas(Interpreter&, const Value& v, Args& a) {
  Value other = one_arg(a, "test_sameas");
  if (v.kind() != other.kind()) return false;
  switch (v.kind()) {
    case Kind::none:
    case Kind::undefined:
      return v.kind() == Kind::none;
    case Kind::boolean:
      return v.as_bool() == other.as_bool();
    case Kind::integer:
      return v.as_int() == other.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
    case Kind::floating:
      return false;
    default:
      return v.identity() == other.identity();
  }
}

Value mod2(const Value& v) {
  return arithmetic(ast::BinaryOp::mod, v, Value::integer(2));
}
bool t_odd(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_odd"), equals(mod2(v), Value::integer(1));
}
bool t_even(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_even"), equals(mod2(v), Value::integer(0));
}
bool t_divisibleby(Interpreter&, const Value& v, Args& a) {
  Value num = one_arg(a, "test_divisibleby");
  return equals(arithmetic(ast::BinaryOp::mod, v, num), Value::integer(0));
}
bool t_in(Interpreter&, const Value& v, Args& a) {
  return contains(one_arg(a, "test_in"), v);
}
bool t_eq(Interpreter&, const Value& v, Args& a) {
  return equals(v, one_arg(a, "eq"));
}
bool t_ne(Interpreter&, const Value& v, Args& a) {
  return !equals(v, one_arg(a, "ne"));
}
bool t_lt(Interpreter&, const Value& v, Args& a) {
  return compare(ast::CompareOp::lt, v, one_arg(a, "lt"));
}
bool t_le(Interpreter&, const Value& v, Args& a) {
  return compare(ast::CompareOp::lteq, v, one_arg(a, "le"));
}
bool t_gt(Interpreter&, const Value& v, Args& a) {
  return compare(ast::CompareOp::gt, v, one_arg(a, "gt"));
}
bool t_ge(Interpreter&, const Value& v, Args& a) {
  return compare(ast::CompareOp::gteq, v, one_arg(a, "ge"));
}
// `value in env.filters`: a dict lookup, so an unhashable value is a TypeError.
bool registry_lookup(const Value& v, bool filters) {
  if (v.is_dict() || (v.is_list() && v.flavor() != ListFlavor::tuple && v.flavor() != ListFlavor::range)) {
    type_error("unhashable type: '{}'", type_name(v));
  }
  return v.is_string() && (filters ? find_filter(v.str()) != nullptr : find_test(v.str()) != nullptr);
}
bool t_filter(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_filter"), registry_lookup(v, true);
}
bool t_test(Interpreter&, const Value& v, Args& a) {
  return no_args(a, "test_test"), registry_lookup(v, false);
}

const std::pair<std::string_view, TestFn> kTests[] = {
    {"odd", t_odd},
    {"even", t_even},
    {"divisibleby", t_divisibleby},
    {"defined", t_defined},
    {"undefined", t_undefined},
    {"filter", t_filter},
    {"test", t_test},
    {"none", t_none},
    {"boolean", t_boolean},
    {"false", t_false},
    {"true", t_true},
    {"integer", t_integer},
    {"float", t_float},
    {"number", t_number},
    {"string", t_string},
    {"mapping", t_mapping},
    {"iterable", t_iterable},
    {"callable", t_callable},
    {"sameas", t_sameas},
    {"escaped", t_escaped},
    {"in", t_in},
    {"lower", t_lower},
    {"upper", t_upper},
    {"sequence", t_sequence},
    {"==", t_eq},
    {"eq", t_eq},
    {"equalto", t_eq},
    {"!=", t_ne},
    {"ne", t_ne},
    {">", t_gt},
    {"gt", t_gt},
    {"greaterthan", t_gt},
    {">=", t_ge},
    {"ge", t_ge},
    {"<", t_lt},
    {"lt", t_lt},
    {"lessthan", t_lt},
    {"<=", t_le},
    {"le", t_le},
};

}  // namespace

TestFn find_test(std::string_view name) {
  for (const auto& [n, fn] : kTests) {
    if (n == name) return fn;
  }
  return nullptr;
}

}  // namespace keel::chat::jinja
