// The Python methods of str, dict, list and tuple values that templates call (`content.strip()`,
// `message.get('x')`, `tool.items()`), with jinja2's ImmutableSandboxedEnvironment rule: a method that would
// mutate the value (list.append, dict.update, ...) is an Undefined whose use raises SecurityError.
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include "chat/jinja/budget.h"
#include "chat/jinja/builtins.h"
#include "chat/jinja/errors.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/pystr.h"

namespace keel::chat::jinja {
namespace {

using Method = Value (*)(const Value& self, CallArgs& args, std::string_view name);

const std::string& str_arg(const Value& v, std::string_view method, int position) {
  if (!v.is_string()) type_error("{}() argument {} must be str, not {}", method, position, type_name(v));
  return v.str();
}

std::optional<int64_t> index_arg(const Value* v) {
  if (!v || v->is_none()) return std::nullopt;
  if (v->is_int() || v->is_bool()) return v->int_value();
  type_error("slice indices must be integers or None or have an __index__ method");
}

std::optional<std::string> optional_str(const Value* v, std::string_view method) {
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) type_error("{} arg must be None or str", method);
  return v->str();
}

Value str_list(std::vector<std::string> parts, const Value& like) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.push_back(string_like(like, std::move(p)));
  return Value::list(std::move(items));
}

uint32_t fill_char(const Value* v) {
  if (!v) return ' ';
  if (!v->is_string() || pystr::length(v->str()) != 1) {
    type_error("The fill character must be exactly one character long");
  }
  return pystr::decode(v->str())[0];
}

int64_t width_arg(const Value* v, std::string_view method) {
  if (!v) type_error("{}() takes at least 1 argument (0 given)", method);
  if (v->is_int() || v->is_bool()) return v->int_value();
  type_error("'{}' object cannot be interpreted as an integer", type_name(*v));
}

template <typename Pred>
bool all_cps(std::string_view s, Pred pred) {
  auto cps = pystr::decode(s);
  return !cps.empty() && std::all_of(cps.begin(), cps.end(), pred);
}

int category(uint32_t cp) {
  return cp > 0x10FFFF ? 0 : static_cast<int>(utf8proc_category(static_cast<utf8proc_int32_t>(cp)));
}
bool is_alpha_cp(uint32_t cp) {
  int c = category(cp);
  return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}
bool is_numeric_cp(uint32_t cp) {
  int c = category(cp);
  return c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO;
}
bool is_decimal_cp(uint32_t cp) {
  return category(cp) == UTF8PROC_CATEGORY_ND;
}

template <size_t N>
bool in(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// str's methods, one function per family; `name` says which member of the family was called.
Value str_strip(const Value& self, CallArgs& args, std::string_view name) {
  ArgReader r(args, name, {"chars"});
  return string_like(
      self, pystr::strip(self.str(), optional_str(r.get(0), name), name != "rstrip", name != "lstrip"));
}

Value str_split(const Value& self, CallArgs& args, std::string_view name) {
  const std::string& s = self.str();
  ArgReader r(args, name, {"sep", "maxsplit"});
  auto sep = r.get(0) && !r.get(0)->is_none() ? std::optional<std::string>(str_arg(*r.get(0), name, 1))
                                              : std::nullopt;
  if (sep && sep->empty()) value_error("empty separator");
  int64_t maxsplit = index_arg(r.get(1)).value_or(-1);
  return str_list(name == "split" ? pystr::split(s, sep, maxsplit) : pystr::rsplit(s, sep, maxsplit), self);
}

Value str_splitlines(const Value& self, CallArgs& args, std::string_view name) {
  ArgReader r(args, name, {"keepends"});
  return str_list(pystr::splitlines(self.str(), truthy(r.get_or(0, Value::boolean(false)))), self);
}

Value str_startswith(const Value& self, CallArgs& args, std::string_view name) {
  ArgReader r(args, name, {"prefix", "start", "end"});
  if (!r.has(0)) type_error("{}() takes at least 1 argument (0 given)", name);
  const Value& prefix = *r.get(0);
  auto start = index_arg(r.get(1)), end = index_arg(r.get(2));
  std::vector<Value> options;
  if (prefix.is_string()) {
    options.push_back(prefix);
  } else if (prefix.is_list() && prefix.flavor() == ListFlavor::tuple) {
    options = prefix.items();
  } else {
    type_error("{} first arg must be str or a tuple of str, not {}", name, type_name(prefix));
  }
  for (const auto& o : options) {
    if (!o.is_string()) type_error("tuple for {} must only contain str, not {}", name, type_name(o));
    if (pystr::starts_with(self.str(), o.str(), start, end, name == "endswith")) return Value::boolean(true);
  }
  return Value::boolean(false);
}

Value str_replace(const Value& self, CallArgs& args, std::string_view name) {
  const std::string& s = self.str();
  ArgReader r(args, name, {"old", "new", "count"});
  if (!r.has(0) || !r.has(1))
    type_error("replace expected at least 2 arguments, got {}", args.positional.size());
  int64_t count = index_arg(r.get(2)).value_or(-1);
  const std::string& old = str_arg(*r.get(0), name, 1);
  const std::string& repl = str_arg(*r.get(1), name, 2);
  check_result_size(pystr::replaced_size(s, old, repl, count));
  return string_like(self, pystr::replace(s, old, repl, count));
}

// find, rfind, index, rindex, count.
Value str_find(const Value& self, CallArgs& args, std::string_view name) {
  const std::string& s = self.str();
  ArgReader r(args, name, {"sub", "start", "end"});
  if (!r.has(0)) type_error("{}() takes at least 1 argument (0 given)", name);
  const std::string& sub = str_arg(*r.get(0), name, 1);
  auto start = index_arg(r.get(1)), end = index_arg(r.get(2));
  if (name == "count") return Value::integer(pystr::count(s, sub, start, end));
  int64_t at = pystr::find(s, sub, start, end, name == "rfind" || name == "rindex");
  if (at < 0 && (name == "index" || name == "rindex")) value_error("substring not found");
  return Value::integer(at);
}

// upper, lower, casefold, title, capitalize, swapcase.
Value str_case(const Value& self, CallArgs& args, std::string_view name) {
  const std::string& s = self.str();
  ArgReader(args, name, {});
  if (name == "upper") return string_like(self, pystr::upper(s));
  if (name == "lower" || name == "casefold") return string_like(self, pystr::lower(s));
  if (name == "title") return string_like(self, pystr::title(s));
  if (name == "capitalize") return string_like(self, pystr::capitalize(s));
  return string_like(self, pystr::swapcase(s));
}

Value str_join(const Value& self, CallArgs& args, std::string_view name) {
  const std::string& s = self.str();
  ArgReader r(args, name, {"iterable"});
  if (!r.has(0)) type_error("str.join() takes exactly one argument (0 given)");
  std::string out;
  size_t i = 0;
  for (const auto& item : iterate(*r.get(0))) {
    if (!item.is_string())
      type_error("sequence item {}: expected str instance, {} found", i, type_name(item));
    if (i++) out += s;
    out += item.str();
    if (out.size() > (size_t{1} << 20)) check_result_size(out.size());
  }
  return string_like(self, std::move(out));
}

// center, ljust, rjust.
Value str_pad(const Value& self, CallArgs& args, std::string_view name) {
  ArgReader r(args, name, {"width", "fillchar"});
  int64_t width = width_arg(r.get(0), name);
  uint32_t fill = fill_char(r.get(1));
  check_result_size(as_size(width) * 4);
  if (name == "center") return string_like(self, pystr::center(self.str(), width, fill));
  return string_like(self, pystr::ljust(self.str(), width, fill, name == "rjust"));
}

Value str_zfill(const Value& self, CallArgs& args, std::string_view name) {
  const std::string& s = self.str();
  ArgReader r(args, name, {"width"});
  int64_t width = width_arg(r.get(0), name);
  check_result_size(as_size(width));
  auto len = static_cast<int64_t>(pystr::length(s));
  if (width <= len) return self;
  std::string pad(static_cast<size_t>(width - len), '0');
  if (!s.empty() && (s[0] == '+' || s[0] == '-'))
    return string_like(self, s.substr(0, 1) + pad + s.substr(1));
  return string_like(self, pad + s);
}

// partition, rpartition.
Value str_partition(const Value& self, CallArgs& args, std::string_view name) {
  const std::string& s = self.str();
  ArgReader r(args, name, {"sep"});
  if (!r.has(0)) type_error("{}() takes exactly one argument (0 given)", name);
  const std::string& sep = str_arg(*r.get(0), name, 1);
  if (sep.empty()) value_error("empty separator");
  size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
  std::vector<std::string> parts;
  if (at == std::string::npos) {
    parts = name == "partition" ? std::vector<std::string>{s, "", ""} : std::vector<std::string>{"", "", s};
  } else {
    parts = {s.substr(0, at), sep, s.substr(at + sep.size())};
  }
  std::vector<Value> items;
  for (auto& p : parts) items.push_back(string_like(self, std::move(p)));
  return Value::list(std::move(items), ListFlavor::tuple);
}

// removeprefix, removesuffix.
Value str_remove_affix(const Value& self, CallArgs& args, std::string_view name) {
  const std::string& s = self.str();
  ArgReader r(args, name, {"affix"});
  if (!r.has(0)) type_error("{}() takes exactly one argument (0 given)", name);
  const std::string& affix = str_arg(*r.get(0), name, 1);
  if (name == "removeprefix" && s.compare(0, affix.size(), affix) == 0) {
    return string_like(self, s.substr(affix.size()));
  }
  if (name == "removesuffix" && !affix.empty() && s.size() >= affix.size() &&
      s.compare(s.size() - affix.size(), affix.size(), affix) == 0) {
    return string_like(self, s.substr(0, s.size() - affix.size()));
  }
  return self;
}

Value str_format_method(const Value& self, CallArgs& args, std::string_view) {
  return str_format(self, args);
}

// The predicates (isalpha, ...): no arguments, a bool from the whole string.
template <bool (*Predicate)(std::string_view)>
Value str_predicate(const Value& self, CallArgs& args, std::string_view name) {
  ArgReader(args, name, {});
  return Value::boolean(Predicate(self.str()));
}

bool is_alpha(std::string_view s) {
  return all_cps(s, is_alpha_cp);
}
bool is_decimal(std::string_view s) {
  return all_cps(s, is_decimal_cp);
}
bool is_numeric(std::string_view s) {
  return all_cps(s, is_numeric_cp);
}
bool is_alnum(std::string_view s) {
  return all_cps(s, [](uint32_t cp) { return is_alpha_cp(cp) || is_numeric_cp(cp); });
}
bool is_space(std::string_view s) {
  return all_cps(s, pystr::is_space);
}
bool is_printable(std::string_view s) {
  auto cps = pystr::decode(s);
  return std::all_of(cps.begin(), cps.end(), pystr::is_printable);
}
bool is_title(std::string_view s) {
  bool cased = false, previous_cased = false;
  for (uint32_t cp : pystr::decode(s)) {
    bool upper = pystr::is_upper_cp(cp) || category(cp) == UTF8PROC_CATEGORY_LT;
    if (upper) {
      if (previous_cased) return false;
      previous_cased = cased = true;
    } else if (pystr::is_lower_cp(cp)) {
      if (!previous_cased) return false;
      previous_cased = cased = true;
    } else {
      previous_cased = false;
    }
  }
  return cased;
}
bool is_identifier(std::string_view s) {
  return !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_') &&
         std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// str methods keel does not implement (encode, translate, ...): TypeError given arguments, else unsupported.
Value str_unsupported(const Value&, CallArgs& args, std::string_view name) {
  ArgReader(args, name, {});
  unsupported_error("str.{}() is not supported by keel's chat templates", name);
}

struct StrMethodEntry {
  std::string_view name;
  Method method;
};

// Every str attribute a template can fetch, sorted by name; a name not here is no str attribute.
constexpr std::array<StrMethodEntry, 47> kStrMethods = {{
    {"capitalize", str_case},
    {"casefold", str_case},
    {"center", str_pad},
    {"count", str_find},
    {"encode", str_unsupported},
    {"endswith", str_startswith},
    {"expandtabs", str_unsupported},
    {"find", str_find},
    {"format", str_format_method},
    {"format_map", str_unsupported},
    {"index", str_find},
    {"isalnum", str_predicate<is_alnum>},
    {"isalpha", str_predicate<is_alpha>},
    {"isascii", str_predicate<pystr::is_ascii>},
    {"isdecimal", str_predicate<is_decimal>},
    {"isdigit", str_predicate<is_decimal>},
    {"isidentifier", str_predicate<is_identifier>},
    {"islower", str_predicate<pystr::is_lower>},
    {"isnumeric", str_predicate<is_numeric>},
    {"isprintable", str_predicate<is_printable>},
    {"isspace", str_predicate<is_space>},
    {"istitle", str_predicate<is_title>},
    {"isupper", str_predicate<pystr::is_upper>},
    {"join", str_join},
    {"ljust", str_pad},
    {"lower", str_case},
    {"lstrip", str_strip},
    {"maketrans", str_unsupported},
    {"partition", str_partition},
    {"removeprefix", str_remove_affix},
    {"removesuffix", str_remove_affix},
    {"replace", str_replace},
    {"rfind", str_find},
    {"rindex", str_find},
    {"rjust", str_pad},
    {"rpartition", str_partition},
    {"rsplit", str_split},
    {"rstrip", str_strip},
    {"split", str_split},
    {"splitlines", str_splitlines},
    {"startswith", str_startswith},
    {"strip", str_strip},
    {"swapcase", str_case},
    {"title", str_case},
    {"translate", str_unsupported},
    {"upper", str_case},
    {"zfill", str_zfill},
}};

const StrMethodEntry* find_str_method(std::string_view name) {
  for (const auto& e : kStrMethods) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

// markupsafe's Markup escapes the str arguments of these methods before calling str's.
constexpr std::array<std::string_view, 15> kMarkupEscapingMethods = {
    "capitalize", "title",  "lower", "upper",     "replace",    "ljust",    "rjust", "lstrip",
    "rstrip",     "center", "strip", "translate", "expandtabs", "swapcase", "zfill"};

Value markup_escape(const Value& v) {
  if (v.is_markup()) return v;
  return Value::string(html_escape(to_str(v)), true);
}

Value str_method(const Value& self, CallArgs& args, std::string_view name);

// Markup's own versions: escapes the arguments in place for the methods that do, and returns the result where
// Markup computes it differently from str (join escapes each item; a few methods return a plain str).
std::optional<Value> markup_method(const Value& self, CallArgs& args, std::string_view name) {
  const std::string& s = self.str();
  if (in(kMarkupEscapingMethods, name)) {
    for (auto& a : args.positional) {
      if (a.is_string()) a = markup_escape(a);
    }
    for (auto& [k, a] : args.keyword) {
      if (a.is_string()) a = markup_escape(a);
    }
  }
  if (name == "join") {
    ArgReader r(args, name, {"iterable"});
    if (!r.has(0)) type_error("str.join() takes exactly one argument (0 given)");
    std::string out;
    size_t i = 0;
    for (const auto& item : iterate(*r.get(0))) {
      if (i++) out += s;
      out += markup_escape(item).str();
      if (out.size() > (size_t{1} << 20)) check_result_size(out.size());
    }
    return Value::string(std::move(out), true);
  }
  if (name == "partition" || name == "rpartition") {
    for (auto& a : args.positional) a = markup_escape(a);
  }
  if (name == "removeprefix" || name == "removesuffix" || name == "casefold") {
    return str_method(Value::string(s), args, name);  // not wrapped by Markup: a plain str
  }
  return std::nullopt;
}

Value str_method(const Value& self, CallArgs& args, std::string_view name) {
  if (self.is_markup()) {
    if (auto result = markup_method(self, args, name)) return std::move(*result);
  }
  const StrMethodEntry* entry = find_str_method(name);
  return entry ? entry->method(self, args, name) : str_unsupported(self, args, name);
}

Value dict_method(const Value& self, CallArgs& args, std::string_view name) {
  const Dict& d = self.dict_data();
  if (name == "get") {
    ArgReader r(args, name, {"key", "default"});
    if (!r.has(0)) type_error("get expected at least 1 argument, got 0");
    const Value* v = d.find(*r.get(0));
    return v ? *v : r.get_or(1, Value::none());
  }
  ArgReader r(args, name,
              name == "fromkeys" ? std::initializer_list<const char*>{"iterable", "value"}
                                 : std::initializer_list<const char*>{});
  if (name == "copy") return self;
  if (name == "fromkeys") {
    if (!r.has(0)) type_error("fromkeys expected at least 1 argument, got 0");
    Dict out;
    for (const auto& k : iterate(*r.get(0))) out.set(k, r.get_or(1, Value::none()));
    return Value::dict(std::move(out));
  }
  std::vector<Value> items;
  for (const auto& [k, v] : d.entries()) {
    if (name == "keys")
      items.push_back(k);
    else if (name == "values")
      items.push_back(v);
    else
      items.push_back(Value::list({k, v}, ListFlavor::tuple));
  }
  return Value::list(std::move(items), name == "keys"     ? ListFlavor::dict_keys
                                       : name == "values" ? ListFlavor::dict_values
                                                          : ListFlavor::dict_items);
}

Value list_method(const Value& self, CallArgs& args, std::string_view name) {
  const auto& items = self.items();
  if (name == "copy") {
    ArgReader(args, name, {});
    return Value::list(items, self.flavor());
  }
  ArgReader r(args, name, {"value", "start", "stop"});
  if (!r.has(0)) type_error("{}() takes at least 1 argument (0 given)", name);
  const Value& x = *r.get(0);
  if (name == "count") {
    return Value::integer(
        std::count_if(items.begin(), items.end(), [&](const Value& v) { return equals(v, x); }));
  }
  auto n = static_cast<int64_t>(items.size());
  int64_t start = index_arg(r.get(1)).value_or(0), stop = index_arg(r.get(2)).value_or(n);
  if (start < 0) start = std::max<int64_t>(0, start + n);
  if (stop < 0) stop = std::max<int64_t>(0, stop + n);
  for (int64_t i = start; i < std::min(stop, n); ++i) {
    if (equals(items[static_cast<size_t>(i)], x)) return Value::integer(i);
  }
  value_error("{} is not in {}", repr(x), type_name(self));
}

constexpr std::array<std::string_view, 6> kDictMethods = {"copy",  "fromkeys", "get",
                                                          "items", "keys",     "values"};
constexpr std::array<std::string_view, 5> kDictMutators = {"clear", "pop", "popitem", "setdefault", "update"};
constexpr std::array<std::string_view, 8> kListMutators = {"append", "clear",  "extend",  "insert",
                                                           "pop",    "remove", "reverse", "sort"};

Value bind(const Value& self, std::string_view name, Method method) {
  std::string n(name);
  return Value::callable(n,
                         [self, n, method](Interpreter&, CallArgs& args) { return method(self, args, n); });
}

Value unsafe(const Value& self, std::string_view name) {
  return Value::undefined(fmt::format("access to attribute {} of {} object is unsafe.", pystr::repr(name),
                                      pystr::repr(type_name(self))),
                          true);
}

}  // namespace

std::optional<Value> builtin_attribute(const Value& obj, std::string_view name) {
  if (obj.is_string()) {
    if (find_str_method(name)) return bind(obj, name, str_method);
    return std::nullopt;
  }
  if (obj.is_dict()) {
    if (in(kDictMethods, name)) return bind(obj, name, dict_method);
    if (in(kDictMutators, name)) return unsafe(obj, name);
    return std::nullopt;
  }
  if (obj.is_list()) {
    ListFlavor f = obj.flavor();
    if (f == ListFlavor::list || f == ListFlavor::tuple || f == ListFlavor::range) {
      if (name == "count" || name == "index" || (f == ListFlavor::list && name == "copy")) {
        return bind(obj, name, list_method);
      }
      if (f == ListFlavor::list && in(kListMutators, name)) return unsafe(obj, name);
    }
    return std::nullopt;
  }
  if (obj.is_int() || obj.is_bool()) {
    int64_t i = obj.int_value();
    if (name == "real" || name == "numerator") return Value::integer(i);
    if (name == "imag") return Value::integer(0);
    if (name == "denominator") return Value::integer(1);
    if (name == "bit_length" || name == "conjugate") {
      std::string n(name);
      return Value::callable(n, [i, n](Interpreter&, CallArgs& args) {
        ArgReader(args, n, {});
        if (n == "conjugate") return Value::integer(i);
        uint64_t mag = i < 0 ? 0 - static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
        int64_t bits = 0;
        while (mag) ++bits, mag >>= 1;
        return Value::integer(bits);
      });
    }
    return std::nullopt;
  }
  if (obj.is_float()) {
    double d = obj.as_float();
    if (name == "real") return obj;
    if (name == "imag") return Value::floating(0.0);
    if (name == "is_integer" || name == "conjugate") {
      std::string n(name);
      return Value::callable(n, [d, n](Interpreter&, CallArgs& args) {
        ArgReader(args, n, {});
        return n == "conjugate" ? Value::floating(d) : Value::boolean(std::isfinite(d) && d == std::floor(d));
      });
    }
    return std::nullopt;
  }
  if (obj.is_callable() && obj.callable_data().is_macro && name == "name") {
    return Value::string(obj.callable_data().name);
  }
  return std::nullopt;
}

}  // namespace keel::chat::jinja
