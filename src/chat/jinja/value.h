// The Jinja engine's values, with Python's semantics (jinja2 runs on Python objects, so a template's output
// depends on them): None, bool, int, float, str, list/tuple (and the list-like range, dict views and
// generators), dict with insertion order, callables (macros, builtins, bound methods), objects (namespace,
// loop, cycler, joiner), and jinja2's Undefined. Containers are immutable once built (jinja2's
// ImmutableSandboxedEnvironment forbids mutation) and shared by pointer, so copying a Value is cheap; only
// namespace objects change after construction.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace keel::chat::jinja {

class Value;
class Interpreter;

enum class Kind : uint8_t {
  undefined,
  none,
  boolean,
  integer,
  floating,
  string,
  list,
  dict,
  callable,
  object
};

// Which Python type a list-like value is: it decides repr (`[1]`, `(1,)`, `range(0, 3)`), equality (a list
// never equals a tuple) and what len()/indexing allow (a generator has no len and is consumed by one
// iteration).
enum class ListFlavor : uint8_t { list, tuple, range, dict_keys, dict_values, dict_items, generator };

struct ListData;
class Dict;
struct CallArgs;
struct Callable;
class Object;
struct UndefinedData;

class Value {
 public:
  Value() : v_(Undef{}) {}
  static Value undefined(std::string message, bool security = false);
  static Value none() { return Value(Rep(nullptr)); }
  static Value boolean(bool b) { return Value(Rep(b)); }
  static Value integer(int64_t i) { return Value(Rep(i)); }
  static Value floating(double d) { return Value(Rep(d)); }
  static Value string(std::string s, bool markup = false);  // charged to the render budget
  // repr: a generator's Python repr before " at 0x…>" ("generator object do_unique"), for printing it.
  static Value list(std::vector<Value> items, ListFlavor flavor = ListFlavor::list,
                    const char* repr = nullptr);
  static Value range(int64_t start, int64_t stop, int64_t step);
  static Value dict(Dict d);
  static Value callable(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn,
                        bool is_macro = false);
  static Value object(std::shared_ptr<Object> obj) { return Value(Rep(std::move(obj))); }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::undefined; }
  bool is_none() const { return kind() == Kind::none; }
  bool is_bool() const { return kind() == Kind::boolean; }
  bool is_int() const { return kind() == Kind::integer; }  // not bool (jinja2's `integer` test)
  bool is_float() const { return kind() == Kind::floating; }
  bool is_number() const { return is_bool() || is_int() || is_float(); }  // Python's numbers.Number
  bool is_string() const { return kind() == Kind::string; }
  bool is_list() const { return kind() == Kind::list; }
  bool is_dict() const { return kind() == Kind::dict; }
  bool is_callable() const { return kind() == Kind::callable; }
  bool is_object() const { return kind() == Kind::object; }
  bool is_markup() const { return markup_; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  // bool and int as a Python int (True == 1); float excluded.
  int64_t int_value() const { return is_bool() ? (as_bool() ? 1 : 0) : as_int(); }
  double number_value() const { return is_float() ? as_float() : static_cast<double>(int_value()); }
  const std::string& str() const { return *std::get<StrPtr>(v_); }
  const ListData& list_data() const { return *std::get<std::shared_ptr<const ListData>>(v_); }
  const std::vector<Value>& items() const;  // list-likes
  ListFlavor flavor() const;
  const Dict& dict_data() const { return *std::get<std::shared_ptr<const Dict>>(v_); }
  const Callable& callable_data() const { return *std::get<std::shared_ptr<const Callable>>(v_); }
  const std::shared_ptr<Object>& object_ptr() const { return std::get<std::shared_ptr<Object>>(v_); }
  const UndefinedData& undefined_data() const;
  const void* identity() const;  // the shared object behind a container/object value, for `is sameas`

  int depth() const;  // container nesting depth: 0 for scalars

 private:
  struct Undef {
    std::shared_ptr<const UndefinedData> data;
  };
  using StrPtr = std::shared_ptr<const std::string>;
  using Rep =
      std::variant<Undef, std::nullptr_t, bool, int64_t, double, StrPtr, std::shared_ptr<const ListData>,
                   std::shared_ptr<const Dict>, std::shared_ptr<const Callable>, std::shared_ptr<Object>>;
  explicit Value(Rep v, bool markup = false) : v_(std::move(v)), markup_(markup) {}
  Rep v_;
  bool markup_ = false;
};

struct ListData {
  std::vector<Value> items;
  ListFlavor flavor = ListFlavor::list;
  int64_t range_start = 0, range_stop = 0, range_step = 1;  // flavor == range only, for repr
  mutable bool consumed = false;                            // flavor == generator: iterated once already
  // flavor == generator: its Python repr before " at 0x…>" ("generator object sync_do_map"); static text
  const char* repr = nullptr;
  int depth = 1;  // nesting depth, bounded (see budget.h)
};

// An insertion-ordered dict. Keys follow Python: 1, 1.0 and True are one key; lists and dicts are not
// hashable.
class Dict {
 public:
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);  // while building only; throws TypeError for an unhashable key
  size_t size() const { return entries_.size(); }
  const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
  int depth = 1;

 private:
  std::vector<std::pair<Value, Value>> entries_;
  std::unordered_multimap<size_t, size_t> index_;  // hash of a key (Python-equal keys hash alike) -> position
};

// A hash consistent with equals() for hashable values; TypeError for lists, dicts and the like.
size_t hash_value(const Value& v);

// Positional and keyword arguments of one call, already evaluated.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct Callable {
  std::string name;  // for error messages and repr
  bool is_macro = false;
  std::function<Value(Interpreter&, CallArgs&)> call;
};

// An object with attributes (namespace, loop, cycler, joiner). jinja2 reads them with getattr.
class Object : public std::enable_shared_from_this<Object> {
 public:
  virtual ~Object() = default;
  virtual std::string type_name() const = 0;  // Python's type name: "Namespace", "LoopContext"...
  virtual std::optional<Value> get_attr(std::string_view name) const = 0;  // nullopt: no such attribute
  virtual std::string repr() const = 0;
  virtual bool is_namespace() const { return false; }
  virtual bool is_callable() const { return false; }
  virtual Value call(Interpreter& interp, CallArgs& args);  // TypeError unless is_callable()
  virtual void clear_references() {}                        // end of render: drop what may form a cycle
};

// jinja2's Undefined: prints as "", iterates as empty, is false, has length 0; anything else (arithmetic,
// attribute access, calls, comparisons) raises UndefinedError with `message`.
struct UndefinedData {
  std::string message;    // "'x' is undefined" / "'dict object' has no attribute 'y'"
  bool security = false;  // an unsafe attribute (list.append): using it raises SecurityError instead
};

inline const std::vector<Value>& Value::items() const {
  return list_data().items;
}
inline ListFlavor Value::flavor() const {
  return list_data().flavor;
}

// Python's bool(x): empty containers, 0, 0.0, None, "" and Undefined are false. A generator is always true.
bool truthy(const Value& v);

// The name Python's type() would print: "int", "str", "dict", "NoneType", "Undefined"...
std::string type_name(const Value& v);
// jinja2's object_type_repr: "dict object", "None", "str object"... (used in undefined-attribute messages)
std::string object_type_repr(const Value& v);

// Python's ==: numbers compare by value across bool/int/float, a list never equals a tuple, dicts ignore
// order.
bool equals(const Value& a, const Value& b);

// Python's str() and repr(): what `{{ x }}` prints and how containers show their items. Both throw a
// LimitError past the render budget's string size, and a RecursionError past kMaxValueDepth.
std::string to_str(const Value& v);
std::string repr(const Value& v);

// The name jinja2 reports for a missing attribute (`'dict object' has no attribute 'x'`) or element.
Value undefined_attribute(const Value& obj, std::string_view name);
Value undefined_element(const Value& obj, const Value& key);
Value undefined_name(std::string_view name);

}  // namespace keel::chat::jinja
