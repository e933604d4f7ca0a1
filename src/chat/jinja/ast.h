// The parsed template: expression and statement nodes, as jinja2's parser builds them (jinja2/nodes.py).
// Nodes own their children; a parsed Template is immutable and may be rendered by several threads at once.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/value.h"

namespace keel::chat::jinja::ast {

enum class ExprKind : uint8_t {
  constant,  // literal
  name,      // variable
  getattr,   // obj.name
  getitem,   // obj[key]
  slice,     // [start:stop:step] inside getitem
  call,      // f(args)
  filter,    // x|f(args)
  test,      // x is t(args)
  unary,     // not / - / +
  binary,    // + - * / // % ** and or
  concat,    // a ~ b ~ c
  compare,   // a < b == c in d
  cond,      // a if b else c
  list,      // [a, b]
  tuple,     // (a, b)
  dict,      // {k: v}
};

struct Expr {
  explicit Expr(ExprKind k, int line_) : kind(k), line(line_) {}
  virtual ~Expr() = default;
  ExprKind kind;
  int line;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Constant : Expr {
  Constant(Value v, int line) : Expr(ExprKind::constant, line), value(std::move(v)) {}
  Value value;
};
struct Name : Expr {
  Name(std::string n, int line) : Expr(ExprKind::name, line), name(std::move(n)) {}
  std::string name;
};
struct GetAttr : Expr {
  GetAttr(ExprPtr o, std::string a, int line)
      : Expr(ExprKind::getattr, line), obj(std::move(o)), attr(std::move(a)) {}
  ExprPtr obj;
  std::string attr;
};
struct GetItem : Expr {
  GetItem(ExprPtr o, ExprPtr k, int line)
      : Expr(ExprKind::getitem, line), obj(std::move(o)), key(std::move(k)) {}
  ExprPtr obj, key;
  // A slice of literals only: jinja2 folds it at compile time with the sandbox's getitem, so a failing one is
  // Undefined instead of an error (a slice at run time is a plain Python subscript, which raises).
  bool constant_slice = false;
};
struct Slice : Expr {
  explicit Slice(int line) : Expr(ExprKind::slice, line) {}
  ExprPtr start, stop, step;  // each may be null
};

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  ExprPtr star_args, star_kwargs;  // *args, **kwargs; may be null
};

struct Call : Expr {
  Call(ExprPtr c, int line) : Expr(ExprKind::call, line), callee(std::move(c)) {}
  ExprPtr callee;
  Arguments args;
};
// A filter or test application. `known` is false for a name jinja2 does not define: allowed inside `if` and
// conditional expressions (jinja2 then fails only when the node runs), an error anywhere else.
struct FilterOrTest : Expr {
  FilterOrTest(ExprKind k, ExprPtr n, std::string nm, int line)
      : Expr(k, line), node(std::move(n)), name(std::move(nm)) {}
  ExprPtr node;  // null for the filter of a `{% filter %}` block
  std::string name;
  Arguments args;
  bool known = true;
};

enum class UnaryOp : uint8_t { not_, neg, pos };
struct Unary : Expr {
  Unary(UnaryOp o, ExprPtr e, int line) : Expr(ExprKind::unary, line), op(o), operand(std::move(e)) {}
  UnaryOp op;
  ExprPtr operand;
};

enum class BinaryOp : uint8_t { add, sub, mul, div, floordiv, mod, pow, and_, or_ };
struct Binary : Expr {
  Binary(BinaryOp o, ExprPtr l, ExprPtr r, int line)
      : Expr(ExprKind::binary, line), op(o), left(std::move(l)), right(std::move(r)) {}
  BinaryOp op;
  ExprPtr left, right;
};

struct Concat : Expr {
  explicit Concat(int line) : Expr(ExprKind::concat, line) {}
  std::vector<ExprPtr> parts;
};

enum class CompareOp : uint8_t { eq, ne, lt, lteq, gt, gteq, in, notin };
struct Compare : Expr {
  Compare(ExprPtr first_, int line) : Expr(ExprKind::compare, line), first(std::move(first_)) {}
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
};

struct CondExpr : Expr {
  explicit CondExpr(int line) : Expr(ExprKind::cond, line) {}
  ExprPtr test, then_expr, else_expr;  // else_expr may be null: the value is then Undefined
};

struct Sequence : Expr {  // list or tuple literal
  Sequence(ExprKind k, int line) : Expr(k, line) {}
  std::vector<ExprPtr> items;
};

struct DictLiteral : Expr {
  explicit DictLiteral(int line) : Expr(ExprKind::dict, line) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

// ---- statements ----

enum class StmtKind : uint8_t {
  output,  // text and {{ expressions }}
  if_,
  for_,
  set,        // {% set target = expr %}
  set_block,  // {% set target %}...{% endset %}
  macro,
  call_block,  // {% call(args) m(...) %}...{% endcall %}
  filter_block,
  with,
  break_,
  continue_,
  scope,  // a body rendered in place ({% generation %} of transformers' AssistantTracker)
};

// Names a frame binds to Undefined when it starts (jinja2's VAR_LOAD_UNDEFINED, see scopes.cpp): names the
// frame assigns whose first mention in it is the assignment and that no enclosing frame mentions. Until
// assigned they read as undefined, also from nested loops and macros, even when the context has a value of
// that name.
using UndefinedAtStart = std::vector<std::string>;

struct Stmt {
  Stmt(StmtKind k, int line_) : kind(k), line(line_) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  int line;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// An assignment target: a name, a namespace attribute (`ns.x`), or a tuple of targets.
struct Target {
  enum class Kind : uint8_t { name, ns_attr, tuple } kind = Kind::name;
  std::string name;  // name, or the namespace variable
  std::string attr;  // ns_attr only
  std::vector<Target> items;
  int line = 1;
};

struct Output : Stmt {
  explicit Output(int line) : Stmt(StmtKind::output, line) {}
  std::vector<ExprPtr> items;  // template text is a Constant string
};

struct If : Stmt {
  explicit If(int line) : Stmt(StmtKind::if_, line) {}
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif...
  Body else_body;
};

struct For : Stmt {
  explicit For(int line) : Stmt(StmtKind::for_, line) {}
  Target target;
  ExprPtr iter;
  ExprPtr filter;  // `for x in y if cond`, may be null
  bool recursive = false;
  Body body, else_body;
  UndefinedAtStart body_undefined, else_undefined;
};

struct Set : Stmt {
  explicit Set(int line) : Stmt(StmtKind::set, line) {}
  Target target;
  ExprPtr value;
};

struct SetBlock : Stmt {
  explicit SetBlock(int line) : Stmt(StmtKind::set_block, line) {}
  Target target;
  ExprPtr filter;  // a FilterOrTest chain whose innermost node is null, or null
  Body body;
  UndefinedAtStart undefined;
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct Macro : Stmt {
  explicit Macro(int line) : Stmt(StmtKind::macro, line) {}
  std::string name;
  std::vector<MacroParam> params;
  bool uses_varargs = false, uses_kwargs = false, uses_caller = false;
  Body body;
  UndefinedAtStart undefined;
};

struct CallBlock : Stmt {
  explicit CallBlock(int line) : Stmt(StmtKind::call_block, line) {}
  ExprPtr call;                   // a Call expression
  std::unique_ptr<Macro> caller;  // the body, as the anonymous macro `caller`
};

struct FilterBlock : Stmt {
  explicit FilterBlock(int line) : Stmt(StmtKind::filter_block, line) {}
  ExprPtr filter;  // FilterOrTest chain whose innermost node is null
  Body body;
  UndefinedAtStart undefined;
};

struct With : Stmt {
  explicit With(int line) : Stmt(StmtKind::with, line) {}
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
  UndefinedAtStart undefined;
};

struct Scope : Stmt {
  explicit Scope(int line) : Stmt(StmtKind::scope, line) {}
  Body body;
  UndefinedAtStart undefined;
};

struct Template {
  Body body;
  UndefinedAtStart undefined;
};

}  // namespace keel::chat::jinja::ast
