// jinja2's compile-time name tracking (jinja2/idtracking.py), reduced to what is observable: which names each
// frame binds to Undefined when it starts. jinja2 compiles every frame (the template, a loop body, a macro, a
// {% set %}/{% filter %}/{% with %} body) to Python locals; a name the frame assigns is a local for the whole
// frame, and if the frame's first mention of it is the assignment and no enclosing frame mentions it, the
// local starts as `missing`. So in `{% for m in msgs %}{{ t }}{% endfor %}{% set t = 1 %}` the loop prints ""
// even when the context has a `t`. Everything else (loading from the context or an enclosing frame) is what
// walking the frame chain at run time gives, so only these names are recorded.
#include <map>
#include <set>
#include <string>

#include "chat/jinja/ast.h"
#include "chat/jinja/parser.h"

namespace keel::chat::jinja {
namespace {

using namespace ast;

enum class Load : uint8_t { parameter, resolve, alias, undefined };

struct Symbols {
  const Symbols* parent = nullptr;
  std::map<std::string, Load> refs;  // names this frame has a local for, and how the local starts
  std::set<std::string> stores;

  bool find_ref(const std::string& name) const {
    for (const Symbols* s = this; s; s = s->parent) {
      if (s->refs.count(name)) return true;
    }
    return false;
  }
  void load(const std::string& name) {
    if (!find_ref(name)) refs[name] = Load::resolve;
  }
  void store(const std::string& name) {
    stores.insert(name);
    if (refs.count(name)) return;
    refs[name] = parent && parent->find_ref(name) ? Load::alias : Load::undefined;
  }
  void declare_parameter(const std::string& name) {
    stores.insert(name);
    refs[name] = Load::parameter;
  }
  // After visiting the branches of an if on copies of this frame: names stored in some branches only start as
  // the outer value (or the context's), not undefined.
  void branch_update(const std::vector<Symbols>& branches) {
    std::map<std::string, size_t> counts;
    for (const auto& b : branches) {
      for (const auto& name : b.stores) {
        if (!stores.count(name)) ++counts[name];
      }
    }
    for (const auto& b : branches) {
      for (const auto& [name, load] : b.refs) refs[name] = load;
      stores.insert(b.stores.begin(), b.stores.end());
    }
    for (const auto& [name, count] : counts) {
      if (count == branches.size()) continue;
      refs[name] = parent && parent->find_ref(name) ? Load::alias : Load::resolve;
    }
  }
  UndefinedAtStart undefined_names() const {
    UndefinedAtStart out;
    for (const auto& [name, load] : refs) {
      if (load == Load::undefined) out.push_back(name);
    }
    return out;
  }
};

class ScopeAnalyzer {
 public:
  // A frame: `visit_contents()` runs over its own level (parameters, then statements); once that is complete,
  // the frames nested in `body` are analyzed with it as their parent, as jinja2's code generator does.
  template <typename F>
  UndefinedAtStart frame(const Symbols* parent, Body& body, F&& visit_contents) {
    Symbols symbols;
    symbols.parent = parent;
    Symbols* saved = cur_;
    cur_ = &symbols;
    visit_contents();
    nested_pass(body);
    cur_ = saved;
    return symbols.undefined_names();
  }

  void analyze(Template& tmpl) {
    tmpl.undefined = frame(nullptr, tmpl.body, [&] { visit_body(tmpl.body); });
  }

 private:
  // ---- expressions: every Name is a load ----
  void expr(const ExprPtr& e) {
    if (e) expr(*e);
  }
  void args(const Arguments& a) {
    for (const auto& p : a.positional) expr(p);
    for (const auto& kw : a.keyword) expr(kw.second);
    expr(a.star_args);
    expr(a.star_kwargs);
  }
  void expr(const Expr& e) {
    switch (e.kind) {
      case ExprKind::name:
        cur_->load(static_cast<const Name&>(e).name);
        break;
      case ExprKind::getattr:
        expr(static_cast<const GetAttr&>(e).obj);
        break;
      case ExprKind::getitem:
        expr(static_cast<const GetItem&>(e).obj), expr(static_cast<const GetItem&>(e).key);
        break;
      case ExprKind::slice: {
        const auto& s = static_cast<const Slice&>(e);
        expr(s.start), expr(s.stop), expr(s.step);
        break;
      }
      case ExprKind::call:
        expr(static_cast<const Call&>(e).callee), args(static_cast<const Call&>(e).args);
        break;
      case ExprKind::filter:
      case ExprKind::test:
        expr(static_cast<const FilterOrTest&>(e).node), args(static_cast<const FilterOrTest&>(e).args);
        break;
      case ExprKind::unary:
        expr(static_cast<const Unary&>(e).operand);
        break;
      case ExprKind::binary:
        expr(static_cast<const Binary&>(e).left), expr(static_cast<const Binary&>(e).right);
        break;
      case ExprKind::concat:
        for (const auto& p : static_cast<const Concat&>(e).parts) expr(p);
        break;
      case ExprKind::compare: {
        const auto& c = static_cast<const Compare&>(e);
        expr(c.first);
        for (const auto& r : c.rest) expr(r.second);
        break;
      }
      case ExprKind::cond: {
        const auto& c = static_cast<const CondExpr&>(e);
        expr(c.test), expr(c.then_expr), expr(c.else_expr);
        break;
      }
      case ExprKind::list:
      case ExprKind::tuple:
        for (const auto& p : static_cast<const Sequence&>(e).items) expr(p);
        break;
      case ExprKind::dict:
        for (const auto& [k, v] : static_cast<const DictLiteral&>(e).items) expr(k), expr(v);
        break;
      default:
        break;
    }
  }

  void store_target(const Target& t) {
    switch (t.kind) {
      case Target::Kind::name:
        cur_->store(t.name);
        break;
      case Target::Kind::ns_attr:
        cur_->load(t.name);
        break;
      case Target::Kind::tuple:
        for (const auto& item : t.items) store_target(item);
        break;
    }
  }
  void param_target(const Target& t) {
    if (t.kind == Target::Kind::tuple) {
      for (const auto& item : t.items) param_target(item);
    } else {
      cur_->declare_parameter(t.name);
    }
  }

  // ---- statements at the current frame's level; nested frames are analyzed on their own ----
  void visit_body(Body& body) {
    for (auto& s : body) stmt(*s);
  }

  Symbols branch(Body& body) {
    Symbols copy = *cur_;
    Symbols* saved = cur_;
    cur_ = &copy;
    visit_body(body);
    cur_ = saved;
    return copy;
  }

  // jinja2 nests elifs: If(test, body, elif_=[If(test2, body2), ...], else_); each elif visited in the elif
  // copy.
  void visit_if(If& node) {
    expr(node.branches[0].first);
    Symbols body = branch(node.branches[0].second);
    Symbols elifs = *cur_;
    {
      Symbols* saved = cur_;
      cur_ = &elifs;
      for (size_t i = 1; i < node.branches.size(); ++i) {
        expr(node.branches[i].first);
        Body empty;
        std::vector<Symbols> sub = {branch(node.branches[i].second), branch(empty), branch(empty)};
        cur_->branch_update(sub);
      }
      cur_ = saved;
    }
    Symbols else_ = branch(node.else_body);
    cur_->branch_update({body, elifs, else_});
  }

  void stmt(Stmt& s) {
    switch (s.kind) {
      case StmtKind::output:
        for (const auto& e : static_cast<Output&>(s).items) expr(e);
        break;
      case StmtKind::if_:
        visit_if(static_cast<If&>(s));
        return;
      case StmtKind::set: {
        auto& n = static_cast<Set&>(s);
        expr(n.value);
        store_target(n.target);
        break;
      }
      case StmtKind::set_block:
        store_target(static_cast<SetBlock&>(s).target);
        break;
      case StmtKind::for_:
        expr(static_cast<For&>(s).iter);
        break;
      case StmtKind::macro:
        cur_->store(static_cast<Macro&>(s).name);
        break;
      case StmtKind::call_block:
        expr(static_cast<CallBlock&>(s).call);
        break;
      case StmtKind::filter_block:
        expr(static_cast<FilterBlock&>(s).filter);
        break;
      case StmtKind::with:
        for (auto& a : static_cast<With&>(s).assignments) expr(a.second);
        break;
      default:
        break;
    }
  }

  // The frames opened by statements of the current frame's level (an if's branches are that level too).
  void nested_pass(Body& body) {
    for (auto& s : body) {
      if (s->kind == StmtKind::if_) {
        auto& n = static_cast<If&>(*s);
        for (auto& [test, b] : n.branches) nested_pass(b);
        nested_pass(n.else_body);
      } else {
        nested_frame(*s);
      }
    }
  }

  void macro_frame(Macro& m) {
    m.undefined = frame(cur_, m.body, [&] {
      for (const auto& p : m.params) cur_->declare_parameter(p.name);
      for (const auto& p : m.params) expr(p.default_value);
      visit_body(m.body);
    });
  }

  void nested_frame(Stmt& s) {
    switch (s.kind) {
      case StmtKind::for_: {
        auto& n = static_cast<For&>(s);
        n.body_undefined = frame(cur_, n.body, [&] {
          cur_->declare_parameter("loop");
          param_target(n.target);
          visit_body(n.body);
        });
        n.else_undefined = frame(cur_, n.else_body, [&] { visit_body(n.else_body); });
        break;
      }
      case StmtKind::macro:
        macro_frame(static_cast<Macro&>(s));
        break;
      case StmtKind::call_block:
        macro_frame(*static_cast<CallBlock&>(s).caller);
        break;
      case StmtKind::set_block: {
        auto& n = static_cast<SetBlock&>(s);
        n.undefined = frame(cur_, n.body, [&] { visit_body(n.body); });
        break;
      }
      case StmtKind::filter_block: {
        auto& n = static_cast<FilterBlock&>(s);
        n.undefined = frame(cur_, n.body, [&] { visit_body(n.body); });
        break;
      }
      case StmtKind::with: {
        auto& n = static_cast<With&>(s);
        n.undefined = frame(cur_, n.body, [&] {
          for (auto& a : n.assignments) param_target(a.first);
          visit_body(n.body);
        });
        break;
      }
      case StmtKind::scope: {
        auto& n = static_cast<Scope&>(s);
        n.undefined = frame(cur_, n.body, [&] { visit_body(n.body); });
        break;
      }
      default:
        break;
    }
  }

  Symbols* cur_ = nullptr;
};

}  // namespace

void analyze_scopes(ast::Template& tmpl) {
  ScopeAnalyzer().analyze(tmpl);
}

}  // namespace keel::chat::jinja
