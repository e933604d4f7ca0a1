// Python's two string formatting languages: `"%s-%05.2f" % args` (and the `format` filter) and
// `"{} {name:>8}".format(...)`, for the conversions templates use.
#include <cmath>
#include <cstdio>

#include "chat/jinja/builtins.h"
#include "chat/jinja/errors.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/pystr.h"

namespace keel::chat::jinja {
namespace {

std::string pad(std::string body, int64_t width, bool left, char fill, bool numeric_zero) {
  auto len = static_cast<int64_t>(pystr::length(body));
  if (width <= len) return body;
  size_t n = static_cast<size_t>(width - len);
  if (left) return body + std::string(n, ' ');
  if (numeric_zero) {
    size_t sign = !body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ') ? 1 : 0;
    if (body.size() > sign + 1 && body[sign] == '0' &&
        (body[sign + 1] == 'x' || body[sign + 1] == 'X' || body[sign + 1] == 'o'))
      sign += 2;
    return body.substr(0, sign) + std::string(n, '0') + body.substr(sign);
  }
  return std::string(n, fill) + body;
}

double float_of(const Value& v, char conv) {
  if (v.is_number()) return v.number_value();
  type_error("must be real number, not {} (%{} format)", type_name(v), conv);
}

int64_t int_of(const Value& v, char conv) {
  if (v.is_int() || v.is_bool()) return v.int_value();
  if (v.is_float() && (conv == 'd' || conv == 'i' || conv == 'u')) {
    double d = v.as_float();
    if (!std::isfinite(d)) raise_error("OverflowError", "cannot convert float infinity to integer");
    return static_cast<int64_t>(std::trunc(d));
  }
  if (conv == 'd' || conv == 'i' || conv == 'u')
    type_error("%{} format: a real number is required, not {}", conv, type_name(v));
  type_error("%{} format: an integer is required, not {}", conv, type_name(v));
}

std::string c_format(const std::string& spec, double d) {
  char buf[512];
  int n = std::snprintf(buf, sizeof buf, spec.c_str(), d);
  if (n < 0 || static_cast<size_t>(n) >= sizeof buf) value_error("formatted number is too long");
  return buf;
}

std::string format_int(int64_t v, char conv, bool alt, bool plus, bool space, int64_t precision) {
  bool neg = v < 0;
  auto mag = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits;
  if (conv == 'x')
    digits = fmt::format("{:x}", mag);
  else if (conv == 'X')
    digits = fmt::format("{:X}", mag);
  else if (conv == 'o')
    digits = fmt::format("{:o}", mag);
  else
    digits = std::to_string(mag);
  if (precision > 0 && static_cast<int64_t>(digits.size()) < precision) {
    digits = std::string(static_cast<size_t>(precision) - digits.size(), '0') + digits;
  }
  std::string prefix = neg ? "-" : plus ? "+" : space ? " " : "";
  if (alt && conv == 'x') prefix += "0x";
  if (alt && conv == 'X') prefix += "0X";
  if (alt && conv == 'o') prefix += "0o";
  return prefix + digits;
}

std::string format_float(double d, char conv, bool alt, bool plus, bool space, int64_t precision) {
  if (std::isinf(d) || std::isnan(d)) {
    std::string s = std::isnan(d) ? "nan" : "inf";
    if (conv == 'E' || conv == 'F' || conv == 'G') s = pystr::upper(s);
    std::string sign = std::signbit(d) && !std::isnan(d) ? "-" : plus ? "+" : space ? " " : "";
    return sign + s;
  }
  std::string spec = "%";
  if (plus)
    spec += '+';
  else if (space)
    spec += ' ';
  if (alt) spec += '#';
  spec += fmt::format(".{}{}", precision < 0 ? 6 : std::min<int64_t>(precision, 300), conv);
  return c_format(spec, d);
}

}  // namespace

Value percent_format(const Value& fmt_value, const Value& args) {
  const std::string& f = fmt_value.str();
  bool markup = fmt_value.is_markup();
  std::vector<Value> positional;
  const Value* mapping = nullptr;
  bool tuple = args.is_list() && args.flavor() == ListFlavor::tuple;
  // Python treats any non-tuple, non-string object with __getitem__ (a dict, a list, jinja2's Undefined)
  // as the mapping of %(name)s, and then never complains that arguments were left unconverted.
  bool subscriptable = !tuple && (args.is_dict() || args.is_undefined() || args.is_list());
  if (tuple) {
    positional = args.items();
  } else {
    if (args.is_dict() || args.is_undefined()) mapping = &args;
    positional.push_back(args);
  }
  size_t next = 0;
  bool used_mapping = false;
  auto take = [&]() -> Value {
    if (next >= positional.size()) type_error("not enough arguments for format string");
    return positional[next++];
  };
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out += f[i];
      continue;
    }
    if (++i >= f.size()) value_error("incomplete format");
    Value arg;
    bool have_arg = false;
    if (f[i] == '(') {
      size_t close = f.find(')', i);
      if (close == std::string::npos) value_error("incomplete format key");
      if (!mapping && subscriptable) type_error("list indices must be integers or slices, not str");
      if (!mapping) type_error("format requires a mapping");
      if (mapping->is_undefined()) fail_undefined(*mapping);
      const Value* v = mapping->dict_data().find(f.substr(i + 1, close - i - 1));
      if (!v) raise_error("KeyError", "{}", pystr::repr(f.substr(i + 1, close - i - 1)));
      arg = *v;
      have_arg = used_mapping = true;
      i = close + 1;
    }
    bool left = false, plus = false, space = false, alt = false, zero = false;
    for (; i < f.size() && std::string_view("-+ #0").find(f[i]) != std::string_view::npos; ++i) {
      left |= f[i] == '-', plus |= f[i] == '+', space |= f[i] == ' ', alt |= f[i] == '#', zero |= f[i] == '0';
    }
    auto number = [&](int64_t dflt) -> int64_t {
      if (i < f.size() && f[i] == '*') {
        ++i;
        Value w = take();
        if (!w.is_int() && !w.is_bool()) type_error("* wants int");
        return w.int_value();
      }
      if (i >= f.size() || !std::isdigit(static_cast<unsigned char>(f[i]))) return dflt;
      int64_t n = 0;
      while (i < f.size() && std::isdigit(static_cast<unsigned char>(f[i])))
        n = std::min<int64_t>(n * 10 + (f[i++] - '0'), 1 << 20);
      return n;
    };
    int64_t width = number(0);
    if (width < 0) left = true, width = -width;
    int64_t precision = -1;
    if (i < f.size() && f[i] == '.') {
      ++i;
      precision = number(0);
    }
    while (i < f.size() && (f[i] == 'h' || f[i] == 'l' || f[i] == 'L')) ++i;
    if (i >= f.size()) value_error("incomplete format");
    char conv = f[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (!have_arg) arg = take();
    std::string body;
    bool numeric = true;
    switch (conv) {
      case 's':
      case 'r':
      case 'a': {
        numeric = false;
        body = conv == 's' ? to_str(arg) : repr(arg);
        if (markup && !arg.is_markup()) body = html_escape(body);
        if (precision >= 0) {
          auto cps = pystr::decode(body);
          body = pystr::encode(cps, 0, static_cast<size_t>(precision));
        }
        break;
      }
      case 'd':
      case 'i':
      case 'u':
      case 'o':
      case 'x':
      case 'X':
        body = format_int(int_of(arg, conv), conv == 'u' ? 'd' : conv, alt, plus, space, precision);
        break;
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G':
        body = format_float(float_of(arg, conv), conv, alt, plus, space, precision);
        break;
      case 'c':
        numeric = false;
        if (arg.is_string() && pystr::length(arg.str()) == 1) {
          body = arg.str();
        } else if (arg.is_int()) {
          if (arg.as_int() < 0 || arg.as_int() > 0x10FFFF)
            raise_error("OverflowError", "%c arg not in range(0x110000)");
          pystr::append_utf8(body, static_cast<uint32_t>(arg.as_int()));
        } else {
          type_error("%c requires int or char");
        }
        break;
      default:
        value_error("unsupported format character {} (0x{:x}) at index {}", pystr::repr(std::string(1, conv)),
                    static_cast<unsigned char>(conv), i);
    }
    out += pad(std::move(body), width, left, ' ', zero && numeric && !left);
  }
  if (next < positional.size() && !subscriptable && !used_mapping) {
    type_error("not all arguments converted during string formatting");
  }
  return Value::string(std::move(out), markup);
}

namespace {

// format(value, spec) for the spec mini-language: [[fill]align][sign][#][0][width][,_][.precision][type]
std::string format_spec(const Value& v, const std::string& spec) {
  if (spec.empty()) return to_str(v);
  size_t i = 0;
  char fill = ' ', align = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (spec.size() >= 2 && is_align(spec[1])) {
    fill = spec[0], align = spec[1], i = 2;
  } else if (is_align(spec[0])) {
    align = spec[0], i = 1;
  }
  char sign = '-';
  if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) sign = spec[i++];
  bool alt = false, zero = false;
  if (i < spec.size() && spec[i] == '#') alt = true, ++i;
  if (i < spec.size() && spec[i] == '0') zero = true, ++i;
  int64_t width = 0;
  while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i])))
    width = std::min<int64_t>(width * 10 + (spec[i++] - '0'), 1 << 20);
  char grouping = 0;
  if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) grouping = spec[i++];
  int64_t precision = -1;
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    precision = 0;
    while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i])))
      precision = std::min<int64_t>(precision * 10 + (spec[i++] - '0'), 300);
  }
  char type = i < spec.size() ? spec[i++] : 0;
  if (i != spec.size()) value_error("Invalid format specifier");
  std::string body;
  bool numeric = false;
  if (v.is_string()) {
    if (type && type != 's') value_error("Unknown format code '{}' for object of type 'str'", type);
    body = v.str();
    if (precision >= 0) body = pystr::encode(pystr::decode(body), 0, static_cast<size_t>(precision));
  } else if ((v.is_int() || v.is_bool()) &&
             (!type || std::string_view("bdoxXcn").find(type) != std::string_view::npos)) {
    numeric = true;
    if (precision >= 0) value_error("Precision not allowed in integer format specifier");
    if (!type && v.is_bool() && spec.empty()) return to_str(v);
    char conv = type == 'x' || type == 'X' || type == 'o' ? type : 'd';
    if (type == 'b') {
      int64_t x = v.int_value();
      uint64_t mag = x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
      body = fmt::format("{}{}{:b}",
                         x < 0         ? "-"
                         : sign == '+' ? "+"
                         : sign == ' ' ? " "
                                       : "",
                         alt ? "0b" : "", mag);
    } else if (type == 'c') {
      pystr::append_utf8(body, static_cast<uint32_t>(v.int_value()));
    } else {
      body = format_int(v.int_value(), conv, alt, sign == '+', sign == ' ', -1);
    }
    if (grouping && conv == 'd') {
      size_t start = body.find_first_of("0123456789");
      std::string digits = body.substr(start), grouped;
      for (size_t k = 0; k < digits.size(); ++k) {
        if (k && (digits.size() - k) % 3 == 0) grouped += grouping;
        grouped += digits[k];
      }
      body = body.substr(0, start) + grouped;
    }
  } else if (v.is_number()) {
    numeric = true;
    double d = v.number_value();
    if (type == '%') {
      body = format_float(d * 100, 'f', alt, sign == '+', sign == ' ', precision) + "%";
    } else if (!type && precision < 0) {
      body = fmt::format("{}{}",
                         d >= 0 && sign == '+'   ? "+"
                         : d >= 0 && sign == ' ' ? " "
                                                 : "",
                         to_str(Value::floating(d)));
    } else if (std::string_view("eEfFgGn").find(type ? type : 'g') != std::string_view::npos) {
      char conv = !type || type == 'n' ? 'g' : type;
      body = format_float(d, conv, alt, sign == '+', sign == ' ', precision < 0 ? 6 : precision);
    } else {
      value_error("Unknown format code '{}' for object of type 'float'", type);
    }
  } else {
    type_error("unsupported format string passed to {}.__format__", type_name(v));
  }
  auto len = static_cast<int64_t>(pystr::length(body));
  if (width <= len) return body;
  size_t n = static_cast<size_t>(width - len);
  if (!align) {
    if (zero && numeric) return pad(body, width, false, '0', true);
    align = numeric ? '>' : '<';
  }
  std::string fill_str;
  pystr::append_utf8(fill_str, static_cast<unsigned char>(fill));
  auto rep = [&](size_t k) {
    std::string s;
    for (size_t j = 0; j < k; ++j) s += fill_str;
    return s;
  };
  if (align == '<') return body + rep(n);
  if (align == '>') return rep(n) + body;
  if (align == '^') return rep(n / 2) + body + rep(n - n / 2);
  size_t sign_len = !body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ') ? 1 : 0;
  return body.substr(0, sign_len) + rep(n) + body.substr(sign_len);
}

}  // namespace

Value str_format(const Value& fmt_value, CallArgs& args) {
  const std::string& f = fmt_value.str();
  std::string out;
  int auto_index = 0;
  bool manual = false;
  auto lookup_field = [&](const std::string& field) -> Value {
    size_t end = field.find_first_of(".[");
    std::string first = field.substr(0, end);
    Value v;
    if (first.empty()) {
      if (manual) value_error("cannot switch from manual field specification to automatic field numbering");
      size_t k = static_cast<size_t>(auto_index++);
      if (k >= args.positional.size())
        raise_error("IndexError", "Replacement index {} out of range for positional args tuple", k);
      v = args.positional[k];
    } else if (std::all_of(first.begin(), first.end(),
                           [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      manual = true;
      auto index = pystr::parse_int(first, 10);
      if (!index)
        raise_error("IndexError", "Replacement index {} out of range for positional args tuple", first);
      size_t k = static_cast<size_t>(*index);
      if (k >= args.positional.size())
        raise_error("IndexError", "Replacement index {} out of range for positional args tuple", k);
      v = args.positional[k];
    } else {
      auto it = std::find_if(args.keyword.begin(), args.keyword.end(),
                             [&](const auto& kw) { return kw.first == first; });
      if (it == args.keyword.end()) raise_error("KeyError", "{}", pystr::repr(first));
      v = it->second;
    }
    size_t pos = end;
    while (pos != std::string::npos && pos < field.size()) {
      if (field[pos] == '.') {
        size_t next = field.find_first_of(".[", pos + 1);
        v = get_attr(v,
                     field.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1));
        pos = next;
      } else {
        size_t close = field.find(']', pos);
        if (close == std::string::npos) value_error("Missing ']' in format string");
        std::string key = field.substr(pos + 1, close - pos - 1);
        auto idx = pystr::parse_int(key, 10);
        v = get_item(v, idx && !key.empty() && std::isdigit(static_cast<unsigned char>(key[0]))
                            ? Value::integer(*idx)
                            : Value::string(key));
        pos = close + 1;
      }
    }
    return v;
  };
  for (size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      value_error("Single '}}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    // Find the matching '}' allowing one level of nested {} in the spec.
    size_t j = i + 1;
    int depth = 1;
    for (; j < f.size(); ++j) {
      if (f[j] == '{') ++depth;
      if (f[j] == '}' && --depth == 0) break;
    }
    if (j >= f.size()) value_error("expected '}}' before end of string");
    std::string field = f.substr(i + 1, j - i - 1);
    std::string spec, conversion;
    size_t colon = field.find(':');
    if (colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    size_t bang = field.find('!');
    if (bang != std::string::npos) {
      conversion = field.substr(bang + 1);
      field = field.substr(0, bang);
    }
    if (spec.find('{') != std::string::npos) {  // nested replacement fields inside the spec
      std::string expanded;
      for (size_t k = 0; k < spec.size(); ++k) {
        if (spec[k] == '{') {
          size_t close = spec.find('}', k);
          if (close == std::string::npos) value_error("unmatched '{{' in format spec");
          expanded += to_str(lookup_field(spec.substr(k + 1, close - k - 1)));
          k = close;
        } else {
          expanded += spec[k];
        }
      }
      spec = expanded;
    }
    Value v = lookup_field(field);
    if (conversion == "r" || conversion == "a")
      v = Value::string(repr(v));
    else if (conversion == "s")
      v = Value::string(to_str(v));
    else if (!conversion.empty())
      value_error("Unknown conversion specifier {}", conversion);
    if (fmt_value.is_markup() && v.is_markup()) {
      if (!spec.empty()) value_error("Unsupported format specification for Markup.");
      out += v.str();
    } else {
      std::string field_text = format_spec(v, spec);
      out += fmt_value.is_markup() ? html_escape(field_text) : field_text;  // markupsafe's EscapeFormatter
    }
    i = j;
  }
  return Value::string(std::move(out), fmt_value.is_markup());
}

}  // namespace keel::chat::jinja
