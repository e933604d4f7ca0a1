// The globals (range, dict, namespace, cycler, joiner, raise_exception, strftime_now) and small helpers the
// builtins share (argument binding, soft_str, attribute paths, HTML escaping).
#include <algorithm>
#include <cctype>
#include <ctime>

#include "chat/jinja/builtins.h"
#include "chat/jinja/errors.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/pystr.h"

namespace keel::chat::jinja {
namespace {

// jinja2's sandbox refuses range() of more than this many items.
constexpr int64_t kMaxRange = 100000;

// Python's dict(*args, **kwargs) into `out`: a mapping or an iterable of pairs, then keywords.
void fill_dict(Dict& out, CallArgs& args, const char* function) {
  if (args.positional.size() > 1)
    type_error("{} expected at most 1 argument, got {}", function, args.positional.size());
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.dict_data().entries()) out.set(k, v);
    } else if (src.is_object() && src.object_ptr()->is_namespace()) {
      type_error("'Namespace' object is not iterable");
    } else {
      size_t i = 0;
      for (const auto& item : iterate(src)) {
        std::vector<Value> pair = iterate(item);
        if (pair.size() != 2) {
          value_error("dictionary update sequence element #{} has length {}; 2 is required", i, pair.size());
        }
        out.set(pair[0], pair[1]);
        ++i;
      }
    }
  }
  for (auto& [k, v] : args.keyword) out.set(Value::string(k), v);
}

class Cycler : public Object {
 public:
  explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
  std::string type_name() const override { return "Cycler"; }
  std::string repr() const override { return "<jinja2.utils.Cycler object>"; }
  std::optional<Value> get_attr(std::string_view name) const override {
    auto self = std::static_pointer_cast<Cycler>(const_cast<Cycler*>(this)->shared_from_this());
    if (name == "items") return Value::list(items_);
    if (name == "pos") return Value::integer(static_cast<int64_t>(pos_));
    if (name == "current") return items_[pos_];
    if (name == "reset") {
      return Value::callable("reset", [self](Interpreter&, CallArgs&) {
        self->pos_ = 0;
        return Value::none();
      });
    }
    if (name == "next") {
      return Value::callable("next", [self](Interpreter&, CallArgs&) {
        Value v = self->items_[self->pos_];
        self->pos_ = (self->pos_ + 1) % self->items_.size();
        return v;
      });
    }
    return std::nullopt;
  }

 private:
  std::vector<Value> items_;
  size_t pos_ = 0;
};

class Joiner : public Object {
 public:
  explicit Joiner(Value sep) : sep_(std::move(sep)) {}
  std::string type_name() const override { return "Joiner"; }
  std::string repr() const override { return "<jinja2.utils.Joiner object>"; }
  std::optional<Value> get_attr(std::string_view name) const override {
    if (name == "sep") return sep_;
    return std::nullopt;
  }
  bool is_callable() const override { return true; }
  Value call(Interpreter&, CallArgs&) override {
    if (!used_) {
      used_ = true;
      return Value::string("");
    }
    return sep_;
  }

 private:
  Value sep_;
  bool used_ = false;
};

int64_t range_arg(const Value& v) {
  if (v.is_int() || v.is_bool()) return v.int_value();
  if (v.is_undefined()) fail_undefined(v);
  type_error("'{}' object cannot be interpreted as an integer", type_name(v));
}

Value builtin_range(Interpreter&, CallArgs& args) {
  if (!args.keyword.empty()) type_error("range() takes no keyword arguments");
  auto& p = args.positional;
  if (p.empty() || p.size() > 3) type_error("range expected at least 1 argument, got {}", p.size());
  int64_t start = 0, stop, step = 1;
  if (p.size() == 1) {
    stop = range_arg(p[0]);
  } else {
    start = range_arg(p[0]);
    stop = range_arg(p[1]);
    if (p.size() == 3) step = range_arg(p[2]);
  }
  if (step == 0) value_error("range() arg 3 must not be zero");
  uint64_t count = 0;
  if (step > 0 ? stop > start : start > stop) {
    uint64_t span = step > 0 ? static_cast<uint64_t>(stop) - static_cast<uint64_t>(start)
                             : static_cast<uint64_t>(start) - static_cast<uint64_t>(stop);
    uint64_t abs_step = step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
    count = span / abs_step + (span % abs_step != 0);
  }
  if (count > static_cast<uint64_t>(kMaxRange)) {
    raise_error("OverflowError", "Range too big. The sandbox blocks ranges larger than MAX_RANGE ({}).",
                kMaxRange);
  }
  return Value::range(start, stop, step);
}

std::string strftime_now(const RenderOptions& options, const std::string& format) {
  std::tm tm{};
  if (options.now) {
    tm = *options.now;
  } else {
    std::time_t t = std::time(nullptr);
    localtime_r(&t, &tm);
  }
  // Python's datetime.strftime handles %f, %z and %Z itself (a naive datetime: "000000", "", "").
  std::string fmt;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '%' && i + 1 < format.size()) {
      char c = format[i + 1];
      if (c == 'f') {
        fmt += "000000";
        ++i;
        continue;
      }
      if (c == 'z' || c == 'Z') {
        ++i;
        continue;
      }
      fmt += format.substr(i, 2);
      ++i;
      continue;
    }
    fmt += format[i];
  }
  fmt += '\x01';  // so an empty result is told apart from a too-small buffer
  std::string out(fmt.size() * 4 + 64, '\0');
  while (true) {
    size_t n = std::strftime(out.data(), out.size(), fmt.c_str(), &tm);
    if (n > 0) {
      out.resize(n - 1);
      return out;
    }
    if (out.size() > (size_t{1} << 20)) value_error("strftime format is too long");
    out.resize(out.size() * 2);
  }
}

}  // namespace

ArgReader::ArgReader(CallArgs& args, std::string_view function, std::initializer_list<const char*> names)
    : bound_(names.size()) {
  std::vector<std::string_view> list(names.begin(), names.end());
  if (args.positional.size() > list.size()) {
    type_error("{}() takes at most {} argument(s) ({} given)", function, list.size() + 1,
               args.positional.size() + 1);
  }
  for (size_t i = 0; i < args.positional.size(); ++i) bound_[i] = args.positional[i];
  for (auto& [key, value] : args.keyword) {
    auto it = std::find(list.begin(), list.end(), key);
    if (it == list.end())
      type_error("{}() got an unexpected keyword argument {}", function, pystr::repr(key));
    size_t i = static_cast<size_t>(it - list.begin());
    if (bound_[i]) type_error("{}() got multiple values for argument {}", function, pystr::repr(key));
    bound_[i] = value;
  }
}

std::optional<Value> Namespace::get_attr(std::string_view name) const {
  if (const Value* v = attrs_.find(name)) return *v;
  return std::nullopt;
}

std::string Namespace::repr() const {
  return "<Namespace " + jinja::repr(Value::dict(attrs_)) + ">";
}

void Namespace::set(const std::string& name, Value value) {
  attrs_.set(Value::string(name), std::move(value));
}

Value to_string_value(const Value& v) {
  return v.is_string() ? v : Value::string(to_str(v));
}

Value lookup_attribute_path(const Value& obj, const std::string& path) {
  Value item = obj;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
    if (digits) {
      auto i = pystr::parse_int(part, 10);
      item = get_item(item, i ? Value::integer(*i) : Value::string(part));
    } else {
      item = get_item(item, Value::string(part));
    }
    if (dot == std::string::npos) return item;
    start = dot + 1;
  }
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

void add_globals(Frame& frame) {
  frame.vars["range"] = Value::callable("range", builtin_range);
  frame.vars["dict"] = Value::callable("dict", [](Interpreter&, CallArgs& args) {
    Dict d;
    fill_dict(d, args, "dict");
    return Value::dict(std::move(d));
  });
  frame.vars["namespace"] = Value::callable("namespace", [](Interpreter& interp, CallArgs& args) {
    Dict d;
    fill_dict(d, args, "namespace");
    auto ns = std::make_shared<Namespace>();
    for (const auto& [k, v] : d.entries()) {
      if (!k.is_string()) type_error("keywords must be strings");
      ns->set(k.str(), v);
    }
    interp.track(ns);
    return Value::object(ns);
  });
  frame.vars["cycler"] = Value::callable("cycler", [](Interpreter&, CallArgs& args) {
    if (args.positional.empty()) raise_error("RuntimeError", "at least one item has to be provided");
    return Value::object(std::make_shared<Cycler>(args.positional));
  });
  frame.vars["joiner"] = Value::callable("joiner", [](Interpreter&, CallArgs& args) {
    ArgReader r(args, "joiner", {"sep"});
    return Value::object(std::make_shared<Joiner>(r.get_or(0, Value::string(", "))));
  });
  frame.vars["raise_exception"] =
      Value::callable("raise_exception", [](Interpreter&, CallArgs& args) -> Value {
        ArgReader r(args, "raise_exception", {"message"});
        if (!r.has(0)) type_error("raise_exception() missing 1 required positional argument: 'message'");
        throw TemplateRaisedError(to_str(*r.get(0)));
      });
  frame.vars["strftime_now"] = Value::callable("strftime_now", [](Interpreter& interp, CallArgs& args) {
    ArgReader r(args, "strftime_now", {"format"});
    if (!r.has(0)) type_error("strftime_now() missing 1 required positional argument: 'format'");
    const Value& f = *r.get(0);
    if (!f.is_string()) type_error("strftime() argument 1 must be str, not {}", type_name(f));
    return Value::string(strftime_now(interp.options(), f.str()));
  });
}

void Namespace::clear_references() {
  attrs_ = Dict();
}

}  // namespace keel::chat::jinja
