// str() and repr() of values, as CPython prints them.
#include <fmt/format.h>

#include "chat/jinja/budget.h"
#include "chat/jinja/pystr.h"
#include "chat/jinja/value.h"

namespace keel::chat::jinja {
namespace {

void check_size(const std::string& out) {
  if (auto* budget = current_budget()) {
    if (out.size() > budget->limits().max_output_bytes) budget->check_string(out.size());
  }
}

void append_repr(std::string& out, const Value& v);

void append_items(std::string& out, const std::vector<Value>& items) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    append_repr(out, items[i]);
    check_size(out);
  }
}

void append_repr(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::undefined:
      out += "Undefined";
      return;
    case Kind::string:
      out += v.is_markup() ? "Markup(" + pystr::repr(v.str()) + ")" : pystr::repr(v.str());
      return;
    case Kind::list: {
      const auto& items = v.items();
      switch (v.flavor()) {
        case ListFlavor::list:
          out += '[';
          append_items(out, items);
          out += ']';
          return;
        case ListFlavor::tuple:
          out += '(';
          append_items(out, items);
          out += items.size() == 1 ? ",)" : ")";
          return;
        case ListFlavor::range: {
          const auto& d = v.list_data();
          out += d.range_step == 1
                     ? fmt::format("range({}, {})", d.range_start, d.range_stop)
                     : fmt::format("range({}, {}, {})", d.range_start, d.range_stop, d.range_step);
          return;
        }
        case ListFlavor::dict_keys:
        case ListFlavor::dict_values:
        case ListFlavor::dict_items:
          out += type_name(v) + "([";
          append_items(out, items);
          out += "])";
          return;
        case ListFlavor::generator:
          // Python prints the object's address; so does keel (the address of its list)
          out += fmt::format("<{} at {:#x}>", v.list_data().repr ? v.list_data().repr : "generator object",
                             reinterpret_cast<uintptr_t>(&v.list_data()));
          return;
      }
      return;
    }
    case Kind::dict: {
      out += '{';
      bool first = true;
      for (const auto& [k, val] : v.dict_data().entries()) {
        if (!first) out += ", ";
        first = false;
        append_repr(out, k);
        out += ": ";
        append_repr(out, val);
        check_size(out);
      }
      out += '}';
      return;
    }
    default:
      out += to_str(v);
      return;
  }
}

}  // namespace

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Kind::undefined:
      return "";
    case Kind::none:
      return "None";
    case Kind::boolean:
      return v.as_bool() ? "True" : "False";
    case Kind::integer:
      return std::to_string(v.as_int());
    case Kind::floating:
      return pystr::float_repr(v.as_float());
    case Kind::string:
      return v.str();
    case Kind::callable:
      if (v.callable_data().is_macro && v.callable_data().name.empty()) return "<Macro anonymous>";
      return v.callable_data().is_macro ? "<Macro " + pystr::repr(v.callable_data().name) + ">"
                                        : "<built-in function " + v.callable_data().name + ">";
    case Kind::object:
      return v.object_ptr()->repr();
    default:
      return repr(v);
  }
}

std::string repr(const Value& v) {
  std::string out;
  append_repr(out, v);
  return out;
}

}  // namespace keel::chat::jinja
