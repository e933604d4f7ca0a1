// jinja2's built-in filters (jinja2/filters.py, 3.1), with transformers' tojson in place of jinja2's.
#include <utf8proc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <utility>

#include "chat/jinja/budget.h"
#include "chat/jinja/builtins.h"
#include "chat/jinja/errors.h"
#include "chat/jinja/json.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/pystr.h"

namespace keel::chat::jinja {
namespace {

using Args = CallArgs;

[[noreturn]] void filter_argument_error(const std::string& message) {
  raise_error("FilterArgumentError", "{}", message);
}

Value soft_str(const Value& v) {
  return to_string_value(v);
}

int64_t int_arg(const Value& v, const char* what) {
  if (v.is_int() || v.is_bool()) return v.int_value();
  if (v.is_undefined()) fail_undefined(v);
  type_error("'{}' object cannot be interpreted as an integer ({})", type_name(v), what);
}

// jinja2's ignore_case postprocessor: lowercases strings, leaves the rest.
Value ignore_case(const Value& v) {
  return v.is_string() ? Value::string(pystr::lower(v.str())) : v;
}

// make_attrgetter: an attribute path (string, dotted) or an integer index; null attribute: the item itself.
Value attr_get(const Value& item, const Value* attribute) {
  if (!attribute || attribute->is_none()) return item;
  if (attribute->is_string()) return lookup_attribute_path(item, attribute->str());
  return get_item(item, *attribute);
}

// A filter's lazy result, with the repr jinja2 3.1.2's (CPython's) object would print before " at 0x…>".
Value generator(std::vector<Value> items, const char* repr) {
  return Value::list(std::move(items), ListFlavor::generator, repr);
}

// ---- strings ----

Value f_upper(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "do_upper", {});
  Value s = soft_str(v);
  return string_like(s, pystr::upper(s.str()));
}
Value f_lower(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "do_lower", {});
  Value s = soft_str(v);
  return string_like(s, pystr::lower(s.str()));
}
Value f_capitalize(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "do_capitalize", {});
  Value s = soft_str(v);
  return string_like(s, pystr::capitalize(s.str()));
}
Value f_title(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "do_title", {});
  // jinja2 splits on runs of [-\s({[<] and capitalizes the first character of every piece.
  Value s = soft_str(v);
  auto cps = pystr::decode(s.str());
  auto is_sep = [](uint32_t cp) {
    return cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || pystr::is_space(cp);
  };
  std::string out;
  size_t i = 0;
  while (i < cps.size()) {
    size_t j = i;
    bool sep = is_sep(cps[i]);
    while (j < cps.size() && is_sep(cps[j]) == sep) ++j;
    std::string piece = pystr::encode(cps, i, j);
    if (sep) {
      out += piece;
    } else {
      std::string first = pystr::encode(cps, i, i + 1);
      out += pystr::upper(first) + pystr::lower(pystr::encode(cps, i + 1, j));
    }
    i = j;
  }
  return Value::string(std::move(out));  // "".join(...): a plain str even for Markup input
}
Value f_trim(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_trim", {"chars"});
  Value s = soft_str(v);
  std::optional<std::string> chars;
  if (const Value* c = r.get(0); c && !c->is_none()) {
    if (!c->is_string()) type_error("strip arg must be None or str");
    chars = s.is_markup() && !c->is_markup() ? html_escape(c->str()) : c->str();  // Markup.strip escapes it
  }
  return string_like(s, pystr::strip(s.str(), chars, true, true));
}
Value f_replace(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_replace", {"old", "new", "count"});
  if (!r.has(0) || !r.has(1)) type_error("do_replace() missing required arguments 'old' and 'new'");
  int64_t count = -1;
  if (const Value* c = r.get(2); c && !c->is_none()) count = int_arg(*c, "count");
  std::string s = to_str(v), old = to_str(*r.get(0)), repl = to_str(*r.get(1));
  check_result_size(pystr::replaced_size(s, old, repl, count));
  return Value::string(pystr::replace(s, old, repl, count));
}
Value f_center(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_center", {"width"});
  Value s = soft_str(v);
  int64_t width = int_arg(r.get_or(0, Value::integer(80)), "width");
  check_result_size(as_size(width));
  return string_like(s, pystr::center(s.str(), width, ' '));
}
Value f_indent(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_indent", {"width", "first", "blank"});
  Value width = r.get_or(0, Value::integer(4));
  std::string indention;
  if (width.is_string()) {
    indention = width.str();
  } else if (width.is_int() || width.is_bool()) {
    check_result_size(as_size(width.int_value()));
    indention = std::string(as_size(width.int_value()), ' ');
  } else {
    type_error("can't multiply sequence by non-int of type '{}'", type_name(width));
  }
  bool first = truthy(r.get_or(1, Value::boolean(false)));
  bool blank = truthy(r.get_or(2, Value::boolean(false)));
  // `s += "\n"` in jinja2: a non-string input fails as Python's + does.
  Value s = arithmetic(ast::BinaryOp::add, v, Value::string("\n"));
  auto lines = pystr::splitlines(s.str(), false);
  check_result_size(s.str().size() + (lines.size() + 1) * indention.size());
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + indention : "") + lines[i];
  } else {
    if (!lines.empty()) rv = lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : indention) + lines[i];
  }
  if (first) rv = indention + rv;
  return string_like(v, std::move(rv));
}
// jinja2's do_truncate: the value itself when len(value) ≤ length + leeway (a short list, an undefined:
// unchanged, not stringified); otherwise a string's head, cut at a space unless killwords, plus `end`
// (escaped when the value is markup). len() of a number or none is Python's TypeError.
Value f_truncate(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_truncate", {"length", "killwords", "end", "leeway"});
  int64_t length = int_arg(r.get_or(0, Value::integer(255)), "length");
  bool killwords = truthy(r.get_or(1, Value::boolean(false)));
  std::string end = to_str(r.get_or(2, Value::string("...")));
  Value leeway_v = r.get_or(3, Value::none());
  int64_t leeway = leeway_v.is_none() ? 5 : int_arg(leeway_v, "leeway");
  auto end_len = static_cast<int64_t>(pystr::length(end));
  if (length < end_len) raise_error("AssertionError", "expected length >= {}, got {}", end_len, length);
  if (leeway < 0) raise_error("AssertionError", "expected leeway >= 0, got {}", leeway);
  if (keel::chat::jinja::length(v) <= length + leeway) return v;
  if (v.is_list()) {
    if (killwords) type_error("can only concatenate list (not \"str\") to list");
    raise_error("AttributeError", "'list' object has no attribute 'rsplit'");
  }
  if (!v.is_string()) type_error("unhashable type: 'slice'");
  const bool markup = v.is_markup();
  if (markup) end = html_escape(end);
  auto cps = pystr::decode(v.str());
  std::string head = pystr::encode(cps, 0, static_cast<size_t>(length - end_len));
  if (killwords) return Value::string(head + end, markup);
  return Value::string(pystr::rsplit(head, std::string(" "), 1)[0] + end, markup);
}
Value f_wordcount(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "do_wordcount", {});
  int64_t words = 0;
  bool in_word = false;
  for (uint32_t cp : pystr::decode(to_str(v))) {
    bool w = cp == '_';
    if (!w && cp <= 0x10FFFF) {
      auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
      w = (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
          (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
    }
    if (w && !in_word) ++words;
    in_word = w;
  }
  return Value::integer(words);
}
Value f_string(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "soft_str", {});
  return soft_str(v);
}
Value f_safe(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "do_mark_safe", {});
  return Value::string(to_str(v), true);
}
Value f_escape(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "escape", {});
  if (v.is_markup()) return v;
  return Value::string(html_escape(to_str(v)), true);
}
Value f_forceescape(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "do_forceescape", {});
  return Value::string(html_escape(to_str(v)), true);
}
Value f_format(Interpreter&, const Value& v, Args& a) {
  if (!a.positional.empty() && !a.keyword.empty()) {
    filter_argument_error("can't handle positional and keyword arguments at the same time");
  }
  Value args;
  if (!a.keyword.empty()) {
    Dict d;
    for (auto& [k, val] : a.keyword) d.set(Value::string(k), val);
    args = Value::dict(std::move(d));
  } else {
    args = Value::list(a.positional, ListFlavor::tuple);
  }
  return percent_format(soft_str(v), args);
}

// ---- numbers ----

Value f_int(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_int", {"default", "base"});
  Value dflt = r.get_or(0, Value::integer(0));
  int64_t base = int_arg(r.get_or(1, Value::integer(10)), "base");
  auto from_float = [&](double d) -> Value {
    if (std::isnan(d)) return dflt;
    if (std::isinf(d)) raise_error("OverflowError", "cannot convert float infinity to integer");
    if (std::fabs(d) >= 9.2233720368547758e18)
      raise_error("OverflowError", "integer does not fit in 64 bits");
    return Value::integer(static_cast<int64_t>(std::trunc(d)));
  };
  switch (v.kind()) {
    case Kind::undefined:
      fail_undefined(v);
    case Kind::boolean:
    case Kind::integer:
      return Value::integer(v.int_value());
    case Kind::floating:
      return from_float(v.as_float());
    case Kind::string: {
      if (base != 0 && (base < 2 || base > 36)) value_error("int() base must be >= 2 and <= 36, or 0");
      if (auto i = pystr::parse_int(v.str(), static_cast<int>(base))) return Value::integer(*i);
      if (auto d = pystr::parse_float(v.str())) return from_float(*d);
      return dflt;
    }
    default:
      return dflt;
  }
}
Value f_float(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_float", {"default"});
  Value dflt = r.get_or(0, Value::floating(0.0));
  switch (v.kind()) {
    case Kind::undefined:
      fail_undefined(v);
    case Kind::boolean:
    case Kind::integer:
      return Value::floating(static_cast<double>(v.int_value()));
    case Kind::floating:
      return v;
    case Kind::string: {
      auto d = pystr::parse_float(v.str());
      return d ? Value::floating(*d) : dflt;
    }
    default:
      return dflt;
  }
}
Value f_abs(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "abs", {});
  if (v.is_float()) return Value::floating(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) return v.int_value() < 0 ? negate(v) : Value::integer(v.int_value());
  type_error("bad operand type for abs(): '{}'", type_name(v));
}
double round_half_even(double x, int64_t digits) {
  if (!std::isfinite(x)) return x;
  if (digits > 300) return x;
  if (digits >= 0) {
    // printf rounds the exact binary value half-to-even, as CPython's round() does.
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(digits), x);
    return std::strtod(buf, nullptr);
  }
  double scale = std::pow(10.0, static_cast<double>(-digits));
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.0f", x / scale);
  return std::strtod(buf, nullptr) * scale;
}
Value f_round(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_round", {"precision", "method"});
  int64_t precision = int_arg(r.get_or(0, Value::integer(0)), "precision");
  std::string method = to_str(r.get_or(1, Value::string("common")));
  if (method != "common" && method != "ceil" && method != "floor") {
    filter_argument_error("method must be common, ceil or floor");
  }
  if (v.is_undefined() || !v.is_number()) type_error("type {} doesn't define __round__ method", type_name(v));
  if (method == "common") {
    if (v.is_float()) return Value::floating(round_half_even(v.as_float(), precision));
    if (precision >= 0) return Value::integer(v.int_value());
    double scaled = round_half_even(static_cast<double>(v.int_value()), precision);
    return Value::integer(static_cast<int64_t>(scaled));
  }
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.number_value() * scale;
  return Value::floating((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

// ---- sequences ----

Value f_length(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "len", {});
  return Value::integer(length(v));
}
Value f_list(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "list", {});
  return Value::list(iterate(v));
}
Value f_first(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "do_first", {});
  auto items = iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}
Value f_last(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "do_last", {});
  if (v.is_list() && v.flavor() == ListFlavor::generator) type_error("'generator' object is not reversible");
  auto items = iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}
Value f_join(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_join", {"d", "attribute"});
  std::string sep = to_str(r.get_or(0, Value::string("")));
  std::string out;
  bool first = true;
  for (const auto& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += to_str(attr_get(item, r.get(1)));
    if (auto* budget = current_budget(); budget && out.size() > budget->limits().max_output_bytes) {
      budget->check_string(out.size());
    }
  }
  return Value::string(std::move(out));
}
// The repr of CPython's reversed(v), by v's kind (a tuple's is the plain "reversed object").
const char* reversed_repr(const Value& v) {
  if (v.is_dict()) return "dict_reversekeyiterator object";
  if (!v.is_list()) return "reversed object";
  switch (v.flavor()) {
    case ListFlavor::list:
      return "list_reverseiterator object";
    case ListFlavor::range:
      return "range_iterator object";
    case ListFlavor::dict_keys:
      return "dict_reversekeyiterator object";
    case ListFlavor::dict_values:
      return "dict_reversevalueiterator object";
    case ListFlavor::dict_items:
      return "dict_reverseitemiterator object";
    default:
      return "reversed object";
  }
}
Value f_reverse(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "do_reverse", {});
  if (v.is_string()) {
    auto cps = pystr::decode(v.str());
    std::reverse(cps.begin(), cps.end());
    return string_like(v, pystr::encode(cps));
  }
  if (v.is_list() && v.flavor() == ListFlavor::generator) {
    auto items = iterate(v);  // jinja2 falls back to list(value) and reverses it
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  auto items = iterate(v);
  std::reverse(items.begin(), items.end());
  return generator(std::move(items), reversed_repr(v));
}
Value f_sum(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_sum", {"attribute", "start"});
  Value total = r.get_or(1, Value::integer(0));
  if (total.is_string()) type_error("sum() can't sum strings [use ''.join(seq) instead]");
  for (const auto& item : iterate(v)) total = arithmetic(ast::BinaryOp::add, total, attr_get(item, r.get(0)));
  return total;
}
Value min_or_max(const Value& v, Args& a, bool want_max, const char* name) {
  ArgReader r(a, name, {"case_sensitive", "attribute"});
  bool case_sensitive = truthy(r.get_or(0, Value::boolean(false)));
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& item) {
    Value k = attr_get(item, r.get(1));
    return case_sensitive ? k : ignore_case(k);
  };
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    if (want_max ? less_than(best_key, k) : less_than(k, best_key)) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}
Value f_min(Interpreter&, const Value& v, Args& a) {
  return min_or_max(v, a, false, "do_min");
}
Value f_max(Interpreter&, const Value& v, Args& a) {
  return min_or_max(v, a, true, "do_max");
}

// Python's sorted(): a stable sort; `reverse` keeps equal items in their original order.
void stable_sort_by_keys(std::vector<Value>& items, const std::vector<Value>& keys, bool reverse) {
  if (auto* budget = current_budget()) {  // n log n comparisons
    int64_t n = static_cast<int64_t>(items.size()), log = 1;
    while ((int64_t{1} << log) < n) ++log;
    budget->charge_steps(n * log);
  }
  std::vector<size_t> idx(items.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) {
    return reverse ? less_than(keys[y], keys[x]) : less_than(keys[x], keys[y]);
  });
  std::vector<Value> sorted;
  sorted.reserve(items.size());
  for (size_t i : idx) sorted.push_back(items[i]);
  items = std::move(sorted);
}
Value f_sort(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_sort", {"reverse", "case_sensitive", "attribute"});
  bool reverse = truthy(r.get_or(0, Value::boolean(false)));
  bool case_sensitive = truthy(r.get_or(1, Value::boolean(false)));
  // make_multi_attrgetter: comma-separated attribute paths; each item's key is the list of their values.
  std::vector<std::optional<Value>> parts;
  const Value* attribute = r.get(2);
  if (attribute && attribute->is_string()) {
    for (const auto& p : pystr::split(attribute->str(), std::string(","), -1))
      parts.emplace_back(Value::string(p));
  } else if (attribute && !attribute->is_none()) {
    parts.emplace_back(*attribute);
  } else {
    parts.emplace_back(std::nullopt);
  }
  auto items = iterate(v);
  std::vector<Value> keys;
  for (const auto& item : items) {
    std::vector<Value> key;
    for (const auto& p : parts) {
      Value k = p ? attr_get(item, &*p) : item;
      key.push_back(case_sensitive ? k : ignore_case(k));
    }
    keys.push_back(Value::list(std::move(key)));
  }
  stable_sort_by_keys(items, keys, reverse);
  return Value::list(std::move(items));
}
Value f_dictsort(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_dictsort", {"case_sensitive", "by", "reverse"});
  bool case_sensitive = truthy(r.get_or(0, Value::boolean(false)));
  std::string by = to_str(r.get_or(1, Value::string("key")));
  bool reverse = truthy(r.get_or(2, Value::boolean(false)));
  size_t pos = by == "key" ? 0 : by == "value" ? 1 : 2;
  if (pos == 2) filter_argument_error("You can only sort by either \"key\" or \"value\"");
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_dict()) raise_error("AttributeError", "'{}' object has no attribute 'items'", type_name(v));
  std::vector<Value> items, keys;
  for (const auto& [k, val] : v.dict_data().entries()) {
    items.push_back(Value::list({k, val}, ListFlavor::tuple));
    const Value& key = pos == 0 ? k : val;
    keys.push_back(case_sensitive ? key : ignore_case(key));
  }
  stable_sort_by_keys(items, keys, reverse);
  return Value::list(std::move(items));
}
Value f_items(Interpreter&, const Value& v, Args& a) {
  ArgReader(a, "do_items", {});
  if (v.is_undefined()) return generator({}, "generator object do_items");
  if (!v.is_dict()) type_error("Can only get item pairs from a mapping.");
  std::vector<Value> items;
  for (const auto& [k, val] : v.dict_data().entries())
    items.push_back(Value::list({k, val}, ListFlavor::tuple));
  return generator(std::move(items), "generator object do_items");
}
Value f_unique(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_unique", {"case_sensitive", "attribute"});
  bool case_sensitive = truthy(r.get_or(0, Value::boolean(false)));
  std::vector<Value> out, seen;
  Dict seen_set;  // hashability and Python's key equality
  for (const auto& item : iterate(v)) {
    Value key = attr_get(item, r.get(1));
    if (!case_sensitive) key = ignore_case(key);
    if (seen_set.find(key)) continue;
    seen_set.set(key, Value::none());
    out.push_back(item);
  }
  return generator(std::move(out), "generator object do_unique");
}
Value f_batch(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_batch", {"linecount", "fill_with"});
  if (!r.has(0)) type_error("do_batch() missing 1 required positional argument: 'linecount'");
  int64_t n = int_arg(*r.get(0), "linecount");
  Value fill = r.get_or(1, Value::none());
  std::vector<Value> out, tmp;
  for (const auto& item : iterate(v)) {
    if (static_cast<int64_t>(tmp.size()) == n) {
      out.push_back(Value::list(std::move(tmp)));
      tmp.clear();
    }
    tmp.push_back(item);
  }
  if (!tmp.empty()) {
    if (!fill.is_none()) {
      check_result_items(as_size(n));
      while (static_cast<int64_t>(tmp.size()) < n) tmp.push_back(fill);
    }
    out.push_back(Value::list(std::move(tmp)));
  }
  return generator(std::move(out), "generator object do_batch");
}
Value f_slice(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_slice", {"slices", "fill_with"});
  if (!r.has(0)) type_error("do_slice() missing 1 required positional argument: 'slices'");
  int64_t slices = int_arg(*r.get(0), "slices");
  Value fill = r.get_or(1, Value::none());
  auto seq = iterate(v);
  auto len = static_cast<int64_t>(seq.size());
  if (slices == 0) raise_error("ZeroDivisionError", "integer division or modulo by zero");
  int64_t per = len / slices, extra = len % slices, offset = 0;
  if (per < 0 || extra < 0) {  // Python floors; a negative slice count gives no slices
    return generator({}, "generator object sync_do_slice");
  }
  check_result_items(as_size(slices));
  std::vector<Value> out;
  for (int64_t n = 0; n < slices; ++n) {
    int64_t start = offset + n * per;
    if (n < extra) ++offset;
    int64_t end = offset + (n + 1) * per;
    std::vector<Value> tmp(seq.begin() + start, seq.begin() + std::min(end, len));
    if (!fill.is_none() && n >= extra) tmp.push_back(fill);
    out.push_back(Value::list(std::move(tmp)));
  }
  return generator(std::move(out), "generator object sync_do_slice");
}
Value f_groupby(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_groupby", {"attribute", "default", "case_sensitive"});
  if (!r.has(0)) type_error("do_groupby() missing 1 required positional argument: 'attribute'");
  Value attribute = *r.get(0);
  Value dflt = r.get_or(1, Value::none());
  bool case_sensitive = truthy(r.get_or(2, Value::boolean(false)));
  auto raw_key = [&](const Value& item) {
    Value k = attr_get(item, &attribute);
    if (!dflt.is_none() && k.is_undefined()) k = dflt;
    return k;
  };
  auto items = iterate(v);
  std::vector<Value> keys;
  for (const auto& item : items) keys.push_back(case_sensitive ? raw_key(item) : ignore_case(raw_key(item)));
  std::vector<size_t> idx(items.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return less_than(keys[x], keys[y]); });
  std::vector<Value> groups;
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    std::vector<Value> members;
    while (j < idx.size() && equals(keys[idx[j]], keys[idx[i]])) members.push_back(items[idx[j++]]);
    Value grouper = case_sensitive ? keys[idx[i]] : raw_key(members.front());
    groups.push_back(Value::list({grouper, Value::list(std::move(members))}, ListFlavor::tuple));
    i = j;
  }
  return Value::list(std::move(groups));
}

Value f_map(Interpreter& interp, const Value& v, Args& a) {
  if (!truthy(v)) return generator({}, "generator object sync_do_map");
  std::vector<Value> out;
  auto items = iterate(v);
  if (a.positional.empty() && std::any_of(a.keyword.begin(), a.keyword.end(),
                                          [](const auto& kw) { return kw.first == "attribute"; })) {
    Value attribute, dflt = Value::none();
    for (auto& [k, val] : a.keyword) {
      if (k == "attribute")
        attribute = val;
      else if (k == "default")
        dflt = val;
      else
        filter_argument_error("Unexpected keyword argument " + pystr::repr(k));
    }
    for (const auto& item : items) {
      Value x = attr_get(item, &attribute);
      if (!dflt.is_none() && x.is_undefined()) x = dflt;
      out.push_back(std::move(x));
    }
    return generator(std::move(out), "generator object sync_do_map");
  }
  if (a.positional.empty()) filter_argument_error("map requires a filter argument");
  std::string name = to_str(a.positional[0]);
  for (const auto& item : items) {
    CallArgs args;
    args.positional.assign(a.positional.begin() + 1, a.positional.end());
    args.keyword = a.keyword;
    out.push_back(interp.apply_filter(name, item, args, 0));
  }
  return generator(std::move(out), "generator object sync_do_map");
}

Value select_or_reject(Interpreter& interp, const Value& v, Args& a, bool select, bool lookup_attr) {
  if (!truthy(v)) return generator({}, "generator object select_or_reject");
  size_t off = 0;
  Value attribute;
  if (lookup_attr) {
    if (a.positional.empty()) filter_argument_error("Missing parameter for attribute name");
    attribute = a.positional[0];
    off = 1;
  }
  std::optional<std::string> test;
  if (a.positional.size() > off) test = to_str(a.positional[off]);
  std::vector<Value> out;
  for (const auto& item : iterate(v)) {
    Value x = lookup_attr ? attr_get(item, &attribute) : item;
    bool ok;
    if (test) {
      CallArgs args;
      args.positional.assign(a.positional.begin() + static_cast<std::ptrdiff_t>(off + 1), a.positional.end());
      args.keyword = a.keyword;
      ok = interp.apply_test(*test, x, args, 0);
    } else {
      ok = truthy(x);
    }
    if (ok == select) out.push_back(item);
  }
  return generator(std::move(out), "generator object select_or_reject");
}
Value f_select(Interpreter& i, const Value& v, Args& a) {
  return select_or_reject(i, v, a, true, false);
}
Value f_reject(Interpreter& i, const Value& v, Args& a) {
  return select_or_reject(i, v, a, false, false);
}
Value f_selectattr(Interpreter& i, const Value& v, Args& a) {
  return select_or_reject(i, v, a, true, true);
}
Value f_rejectattr(Interpreter& i, const Value& v, Args& a) {
  return select_or_reject(i, v, a, false, true);
}

// ---- everything else ----

Value f_default(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_default", {"default_value", "boolean"});
  bool boolean = truthy(r.get_or(1, Value::boolean(false)));
  if (v.is_undefined() || (boolean && !truthy(v))) return r.get_or(0, Value::string(""));
  return v;
}
Value f_attr(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "do_attr", {"name"});
  if (!r.has(0)) type_error("do_attr() missing 1 required positional argument: 'name'");
  std::string name = to_str(*r.get(0));
  if (v.is_undefined()) fail_undefined(v);
  if (auto attr = builtin_attribute(v, name)) return *attr;
  if (v.is_object()) {
    if (auto attr = v.object_ptr()->get_attr(name)) return *attr;
  }
  return undefined_attribute(v, name);
}
Value f_tojson(Interpreter&, const Value& v, Args& a) {
  ArgReader r(a, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
  DumpOptions o;
  o.ensure_ascii = truthy(r.get_or(0, Value::boolean(false)));
  Value indent = r.get_or(1, Value::none());
  if (indent.is_string()) {
    o.indent = indent.str();
  } else if (indent.is_int() || indent.is_bool()) {
    check_result_size(as_size(indent.int_value()));
    o.indent = std::string(as_size(indent.int_value()), ' ');
  } else if (!indent.is_none()) {
    type_error("can't multiply sequence by non-int of type '{}'", type_name(indent));
  }
  if (o.indent) o.item_separator = ",";
  Value seps = r.get_or(2, Value::none());
  if (!seps.is_none()) {
    auto parts = iterate(seps);
    if (parts.size() != 2) value_error("too many values to unpack (expected 2)");
    o.item_separator = to_str(parts[0]);
    o.key_separator = to_str(parts[1]);
  }
  o.sort_keys = truthy(r.get_or(3, Value::boolean(false)));
  return Value::string(dumps(v, o));
}

Value unsupported_filter(const char* name) {
  unsupported_error("the '{}' filter is not supported by keel's chat templates", name);
}
Value f_unsupported_random(Interpreter&, const Value&, Args&) {
  return unsupported_filter("random");
}
Value f_unsupported_wordwrap(Interpreter&, const Value&, Args&) {
  return unsupported_filter("wordwrap");
}
Value f_unsupported_urlize(Interpreter&, const Value&, Args&) {
  return unsupported_filter("urlize");
}
Value f_unsupported_urlencode(Interpreter&, const Value&, Args&) {
  return unsupported_filter("urlencode");
}
Value f_unsupported_xmlattr(Interpreter&, const Value&, Args&) {
  return unsupported_filter("xmlattr");
}
Value f_unsupported_striptags(Interpreter&, const Value&, Args&) {
  return unsupported_filter("striptags");
}
Value f_unsupported_pprint(Interpreter&, const Value&, Args&) {
  return unsupported_filter("pprint");
}
Value f_unsupported_filesizeformat(Interpreter&, const Value&, Args&) {
  return unsupported_filter("filesizeformat");
}

const std::pair<std::string_view, FilterFn> kFilters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"batch", f_batch},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", f_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"filesizeformat", f_unsupported_filesizeformat},
    {"first", f_first},
    {"float", f_float},
    {"forceescape", f_forceescape},
    {"format", f_format},
    {"groupby", f_groupby},
    {"indent", f_indent},
    {"int", f_int},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", f_map},
    {"max", f_max},
    {"min", f_min},
    {"pprint", f_unsupported_pprint},
    {"random", f_unsupported_random},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"slice", f_slice},
    {"sort", f_sort},
    {"string", f_string},
    {"striptags", f_unsupported_striptags},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"truncate", f_truncate},
    {"unique", f_unique},
    {"upper", f_upper},
    {"urlencode", f_unsupported_urlencode},
    {"urlize", f_unsupported_urlize},
    {"wordcount", f_wordcount},
    {"wordwrap", f_unsupported_wordwrap},
    {"xmlattr", f_unsupported_xmlattr},
};

}  // namespace

FilterFn find_filter(std::string_view name) {
  for (const auto& [n, fn] : kFilters) {
    if (n == name) return fn;
  }
  return nullptr;
}

}  // namespace keel::chat::jinja
