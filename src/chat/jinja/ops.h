// Python's operators over Values, with the errors Python raises: arithmetic (`//` and `%` floor toward -inf,
// `/` always gives a float, str * int repeats), ordering, `in`, len() and iteration, and the sandboxed
// attribute / item lookup jinja2 does (`x.y` tries the attribute then the item; `x['y']` the item then the
// attribute; names starting with `_` and mutating methods are refused).
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "chat/jinja/ast.h"
#include "chat/jinja/value.h"

namespace keel::chat::jinja {

// Throws what using an Undefined throws: UndefinedError with its message (SecurityError for an unsafe
// attribute).
[[noreturn]] void fail_undefined(const Value& undefined);

Value arithmetic(ast::BinaryOp op, const Value& a, const Value& b);  // add sub mul div floordiv mod pow
Value negate(const Value& v);
Value unary_plus(const Value& v);

// Python's a < b etc.; throws TypeError for unorderable types.
bool less_than(const Value& a, const Value& b);
bool compare(ast::CompareOp op, const Value& a, const Value& b);
// -1 / 0 / 1 by Python's ordering (for sorting); TypeError for unorderable types.
int order(const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);  // `item in container`

// Python's iter(): list-likes give their items, dicts their keys, strings their characters, Undefined
// nothing. A generator can be iterated once; later iterations give nothing. TypeError for anything else.
std::vector<Value> iterate(const Value& v);
// Python's len(); TypeError for values without one.
int64_t length(const Value& v);

Value get_item(const Value& obj, const Value& key);       // x[key] in the sandbox
Value get_attr(const Value& obj, std::string_view name);  // x.name in the sandbox
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// A string Value that keeps jinja2's Markup flag when `like` is markup.
Value string_like(const Value& like, std::string s);

}  // namespace keel::chat::jinja
