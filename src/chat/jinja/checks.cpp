// jinja2's compile-time checks (its compiler raises these before rendering anything): unknown filters and
// tests outside an `if` or conditional expression, `break`/`continue` outside a loop, assigning to `loop`;
// and which special names (varargs, kwargs, caller) each macro reads, which decides the arguments it accepts.
#include <algorithm>

#include "chat/jinja/errors.h"
#include "chat/jinja/parser.h"
#include "chat/jinja/pystr.h"

namespace keel::chat::jinja {
namespace {

using namespace ast;

class Checker {
 public:
  void body(Body& b, bool soft, bool in_loop) {
    for (auto& s : b) stmt(*s, soft, in_loop);
  }

 private:
  void names_in(const Expr& e, Macro& m) {
    walk(e, [&](const Expr& x) {
      if (x.kind != ExprKind::name) return;
      const std::string& n = static_cast<const Name&>(x).name;
      m.uses_varargs |= n == "varargs";
      m.uses_kwargs |= n == "kwargs";
      m.uses_caller |= n == "caller";
    });
  }

  template <typename F>
  void walk(const Expr& e, const F& f) {
    f(e);
    auto sub = [&](const ExprPtr& p) {
      if (p) walk(*p, f);
    };
    auto args = [&](const Arguments& a) {
      for (const auto& p : a.positional) sub(p);
      for (const auto& kw : a.keyword) sub(kw.second);
      sub(a.star_args);
      sub(a.star_kwargs);
    };
    switch (e.kind) {
      case ExprKind::getattr:
        sub(static_cast<const GetAttr&>(e).obj);
        break;
      case ExprKind::getitem:
        sub(static_cast<const GetItem&>(e).obj);
        sub(static_cast<const GetItem&>(e).key);
        break;
      case ExprKind::slice: {
        const auto& s = static_cast<const Slice&>(e);
        sub(s.start), sub(s.stop), sub(s.step);
        break;
      }
      case ExprKind::call:
        sub(static_cast<const Call&>(e).callee);
        args(static_cast<const Call&>(e).args);
        break;
      case ExprKind::filter:
      case ExprKind::test:
        sub(static_cast<const FilterOrTest&>(e).node);
        args(static_cast<const FilterOrTest&>(e).args);
        break;
      case ExprKind::unary:
        sub(static_cast<const Unary&>(e).operand);
        break;
      case ExprKind::binary:
        sub(static_cast<const Binary&>(e).left);
        sub(static_cast<const Binary&>(e).right);
        break;
      case ExprKind::concat:
        for (const auto& p : static_cast<const Concat&>(e).parts) sub(p);
        break;
      case ExprKind::compare: {
        const auto& c = static_cast<const Compare&>(e);
        sub(c.first);
        for (const auto& r : c.rest) sub(r.second);
        break;
      }
      case ExprKind::cond: {
        const auto& c = static_cast<const CondExpr&>(e);
        sub(c.test), sub(c.then_expr), sub(c.else_expr);
        break;
      }
      case ExprKind::list:
      case ExprKind::tuple:
        for (const auto& p : static_cast<const Sequence&>(e).items) sub(p);
        break;
      case ExprKind::dict:
        for (const auto& [k, v] : static_cast<const DictLiteral&>(e).items) sub(k), sub(v);
        break;
      default:
        break;
    }
  }

  void expr(const ExprPtr& e, bool soft) {
    if (!e) return;
    if (e->kind == ExprKind::cond) {
      const auto& c = static_cast<const CondExpr&>(*e);
      expr(c.test, true), expr(c.then_expr, true), expr(c.else_expr, true);
      return;
    }
    if (e->kind == ExprKind::filter || e->kind == ExprKind::test) {
      const auto& f = static_cast<const FilterOrTest&>(*e);
      if (!f.known && !soft) {
        throw TemplateError(
            ErrorCode::invalid_file, "TemplateAssertionError",
            fmt::format("No {} named {}. (line {})", e->kind == ExprKind::filter ? "filter" : "test",
                        pystr::repr(f.name), f.line));
      }
      expr(f.node, soft);
      args(f.args, soft);
      return;
    }
    // Every other node: check the children with the same softness.
    walk_children(*e, soft);
  }

  void args(const Arguments& a, bool soft) {
    for (const auto& p : a.positional) expr(p, soft);
    for (const auto& kw : a.keyword) expr(kw.second, soft);
    expr(a.star_args, soft);
    expr(a.star_kwargs, soft);
  }

  void walk_children(const Expr& e, bool soft) {
    switch (e.kind) {
      case ExprKind::getattr:
        expr(static_cast<const GetAttr&>(e).obj, soft);
        break;
      case ExprKind::getitem:
        expr(static_cast<const GetItem&>(e).obj, soft);
        expr(static_cast<const GetItem&>(e).key, soft);
        break;
      case ExprKind::slice: {
        const auto& s = static_cast<const Slice&>(e);
        expr(s.start, soft), expr(s.stop, soft), expr(s.step, soft);
        break;
      }
      case ExprKind::call:
        expr(static_cast<const Call&>(e).callee, soft);
        args(static_cast<const Call&>(e).args, soft);
        break;
      case ExprKind::unary:
        expr(static_cast<const Unary&>(e).operand, soft);
        break;
      case ExprKind::binary:
        expr(static_cast<const Binary&>(e).left, soft);
        expr(static_cast<const Binary&>(e).right, soft);
        break;
      case ExprKind::concat:
        for (const auto& p : static_cast<const Concat&>(e).parts) expr(p, soft);
        break;
      case ExprKind::compare: {
        const auto& c = static_cast<const Compare&>(e);
        expr(c.first, soft);
        for (const auto& r : c.rest) expr(r.second, soft);
        break;
      }
      case ExprKind::list:
      case ExprKind::tuple:
        for (const auto& p : static_cast<const Sequence&>(e).items) expr(p, soft);
        break;
      case ExprKind::dict:
        for (const auto& [k, v] : static_cast<const DictLiteral&>(e).items) expr(k, soft), expr(v, soft);
        break;
      default:
        break;
    }
  }

  void check_target(const Target& t) {
    if (t.kind == Target::Kind::name && t.name == "loop") {
      throw TemplateError(
          ErrorCode::invalid_file, "TemplateAssertionError",
          fmt::format("Can't assign to special loop variable in for-loop target (line {})", t.line));
    }
    for (const auto& item : t.items) check_target(item);
  }

  void macro(Macro& m) {
    for (auto& p : m.params) {
      expr(p.default_value, false);
      if (p.default_value) names_in(*p.default_value, m);
    }
    body(m.body, false, false);
    scan_body(m.body, m);
  }

  // Marks which special names a macro's body reads (nested macros included, as jinja2's visitor does).
  void scan_body(const Body& b, Macro& m) {
    for (const auto& s : b) scan_stmt(*s, m);
  }
  void scan_stmt(const Stmt& s, Macro& m) {
    auto e = [&](const ExprPtr& p) {
      if (p) names_in(*p, m);
    };
    switch (s.kind) {
      case StmtKind::output:
        for (const auto& p : static_cast<const Output&>(s).items) e(p);
        break;
      case StmtKind::if_: {
        const auto& n = static_cast<const If&>(s);
        for (const auto& [test, b] : n.branches) e(test), scan_body(b, m);
        scan_body(n.else_body, m);
        break;
      }
      case StmtKind::for_: {
        const auto& n = static_cast<const For&>(s);
        e(n.iter), e(n.filter);
        scan_body(n.body, m), scan_body(n.else_body, m);
        break;
      }
      case StmtKind::set:
        e(static_cast<const Set&>(s).value);
        break;
      case StmtKind::set_block:
        e(static_cast<const SetBlock&>(s).filter);
        scan_body(static_cast<const SetBlock&>(s).body, m);
        break;
      case StmtKind::macro:
        scan_body(static_cast<const Macro&>(s).body, m);
        break;
      case StmtKind::call_block:
        e(static_cast<const CallBlock&>(s).call);
        scan_body(static_cast<const CallBlock&>(s).caller->body, m);
        break;
      case StmtKind::filter_block:
        e(static_cast<const FilterBlock&>(s).filter);
        scan_body(static_cast<const FilterBlock&>(s).body, m);
        break;
      case StmtKind::with: {
        const auto& n = static_cast<const With&>(s);
        for (const auto& a : n.assignments) e(a.second);
        scan_body(n.body, m);
        break;
      }
      case StmtKind::scope:
        scan_body(static_cast<const Scope&>(s).body, m);
        break;
      default:
        break;
    }
  }

  void stmt(Stmt& s, bool soft, bool in_loop) {
    switch (s.kind) {
      case StmtKind::output:
        for (const auto& e : static_cast<Output&>(s).items) expr(e, soft);
        break;
      case StmtKind::if_: {
        auto& n = static_cast<If&>(s);
        for (auto& [test, b] : n.branches) {
          expr(test, true);
          body(b, true, in_loop);
        }
        body(n.else_body, true, in_loop);
        break;
      }
      case StmtKind::for_: {
        auto& n = static_cast<For&>(s);
        check_target(n.target);
        expr(n.iter, soft);
        expr(n.filter, false);
        body(n.body, false, true);
        body(n.else_body, false, in_loop);
        break;
      }
      case StmtKind::set:
        expr(static_cast<Set&>(s).value, soft);
        break;
      case StmtKind::set_block:
        expr(static_cast<SetBlock&>(s).filter, false);
        body(static_cast<SetBlock&>(s).body, false, in_loop);
        break;
      case StmtKind::macro:
        macro(static_cast<Macro&>(s));
        break;
      case StmtKind::call_block:
        expr(static_cast<CallBlock&>(s).call, soft);
        macro(*static_cast<CallBlock&>(s).caller);
        break;
      case StmtKind::filter_block:
        expr(static_cast<FilterBlock&>(s).filter, false);
        body(static_cast<FilterBlock&>(s).body, false, in_loop);
        break;
      case StmtKind::with: {
        auto& n = static_cast<With&>(s);
        for (auto& a : n.assignments) expr(a.second, soft);
        body(n.body, false, in_loop);
        break;
      }
      case StmtKind::break_:
      case StmtKind::continue_:
        if (!in_loop) {
          throw TemplateError(ErrorCode::invalid_file, "SyntaxError",
                              fmt::format("'{}' outside loop (line {})",
                                          s.kind == StmtKind::break_ ? "break" : "continue", s.line));
        }
        break;
      case StmtKind::scope:
        body(static_cast<Scope&>(s).body, false, false);
        break;
    }
  }
};

}  // namespace

void check_template(ast::Template& tmpl) {
  Checker().body(tmpl.body, false, false);
}

bool is_known_filter(std::string_view name) {
  static constexpr std::string_view kFilters[] = {
      "abs",       "attr",       "batch",       "capitalize", "center",  "count",
      "d",         "default",    "dictsort",    "e",          "escape",  "filesizeformat",
      "first",     "float",      "forceescape", "format",     "groupby", "indent",
      "int",       "join",       "last",        "length",     "list",    "lower",
      "items",     "map",        "min",         "max",        "pprint",  "random",
      "reject",    "rejectattr", "replace",     "reverse",    "round",   "safe",
      "select",    "selectattr", "slice",       "sort",       "string",  "striptags",
      "sum",       "title",      "trim",        "truncate",   "unique",  "upper",
      "urlencode", "urlize",     "wordcount",   "wordwrap",   "xmlattr", "tojson"};
  return std::find(std::begin(kFilters), std::end(kFilters), name) != std::end(kFilters);
}

bool is_known_test(std::string_view name) {
  static constexpr std::string_view kTests[] = {
      "odd",      "even",     "divisibleby", "defined", "undefined", "filter", "test",   "none",
      "boolean",  "false",    "true",        "integer", "float",     "number", "string", "mapping",
      "iterable", "callable", "sameas",      "escaped", "in",        "lower",  "upper",  "sequence",
      "==",       "eq",       "equalto",     "!=",      "ne",        ">",      "gt",     "greaterthan",
      ">=",       "ge",       "<",           "lt",      "lessthan",  "<=",     "le"};
  return std::find(std::begin(kTests), std::end(kTests), name) != std::end(kTests);
}

}  // namespace keel::chat::jinja
