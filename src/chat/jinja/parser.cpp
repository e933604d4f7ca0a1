#include "chat/jinja/parser.h"

#include <algorithm>
#include <array>
#include <initializer_list>

#include "chat/jinja/errors.h"
#include "chat/jinja/pystr.h"

namespace keel::chat::jinja {
namespace {

using namespace ast;

// Deeper expression or statement nesting than this is refused (jinja2 hits Python's recursion limit instead).
constexpr int kMaxParseDepth = 250;

std::string describe(const Token& t) {
  switch (t.type) {
    case Tok::data:
      return "template data / text";
    case Tok::variable_begin:
      return "begin of print statement";
    case Tok::variable_end:
      return "end of print statement";
    case Tok::block_begin:
      return "begin of statement block";
    case Tok::block_end:
      return "end of statement block";
    case Tok::name:
    case Tok::op:
      return t.value;
    case Tok::string:
      return "string";
    case Tok::integer:
      return "integer";
    case Tok::floating:
      return "float";
    case Tok::eof:
      return "end of template";
  }
  return "?";
}

bool is_literal(const Expr* e);

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Template parse_template() {
    Template tmpl;
    tmpl.body = subparse({});
    return tmpl;
  }

 private:
  // ---- token stream ----
  const Token& cur() const { return t_[i_]; }
  const Token& look() const { return t_[std::min(i_ + 1, t_.size() - 1)]; }
  const Token& next() {
    const Token& t = t_[i_];
    if (i_ + 1 < t_.size()) ++i_;
    return t;
  }
  bool is_op(std::string_view op) const { return cur().type == Tok::op && cur().value == op; }
  bool is_name(std::string_view name) const { return cur().type == Tok::name && cur().value == name; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail(const std::string& message) const { syntax_error(cur().line, "{}", message); }
  void expect_failed(const std::string& what) const {
    if (cur().type == Tok::eof) fail(fmt::format("unexpected end of template, expected '{}'.", what));
    fail(fmt::format("expected token '{}', got '{}'", what, describe(cur())));
  }
  const Token& expect(Tok type, const char* what) {
    if (cur().type != type) expect_failed(what);
    return next();
  }
  void expect_op(std::string_view op) {
    if (!is_op(op)) expect_failed(std::string(op));
    next();
  }
  void expect_name(std::string_view name) {
    if (!is_name(name)) expect_failed(std::string(name));
    next();
  }
  struct DepthGuard {
    explicit DepthGuard(Parser& p) : parser(p) {
      if (++parser.depth_ > kMaxParseDepth) parser.fail("the template nests too deeply");
    }
    ~DepthGuard() { --parser.depth_; }
    Parser& parser;
  };

  // ---- statements ----
  bool at_end_token(const std::vector<std::string_view>& end_tokens) const {
    return cur().type == Tok::name &&
           std::find(end_tokens.begin(), end_tokens.end(), std::string_view(cur().value)) != end_tokens.end();
  }

  Body subparse(const std::vector<std::string_view>& end_tokens) {
    DepthGuard guard(*this);
    Body body;
    std::unique_ptr<Output> pending;
    auto flush = [&] {
      if (pending) body.push_back(std::move(pending));
    };
    auto output = [&]() -> Output& {
      if (!pending) pending = std::make_unique<Output>(cur().line);
      return *pending;
    };
    while (cur().type != Tok::eof) {
      if (cur().type == Tok::data) {
        output().items.push_back(std::make_unique<Constant>(Value::string(cur().value), cur().line));
        next();
      } else if (cur().type == Tok::variable_begin) {
        next();
        output().items.push_back(parse_tuple(false, true, {}, false));
        expect(Tok::variable_end, "end of print statement");
      } else if (cur().type == Tok::block_begin) {
        flush();
        next();
        if (!end_tokens.empty() && at_end_token(end_tokens)) return body;
        body.push_back(parse_statement());
        expect(Tok::block_end, "end of statement block");
      } else {
        fail("internal parsing error");
      }
    }
    flush();
    return body;
  }

  Body parse_statements(const std::vector<std::string_view>& end_tokens, bool drop_needle) {
    skip_op(":");
    expect(Tok::block_end, "end of statement block");
    Body body = subparse(end_tokens);
    if (cur().type == Tok::eof) {
      std::string looking;
      for (auto e : end_tokens) looking += (looking.empty() ? "'" : " or '") + std::string(e) + "'";
      fail("Unexpected end of template. Jinja was looking for the following tags: " + looking + ".");
    }
    if (drop_needle) next();
    return body;
  }

  StmtPtr parse_statement() {
    const Token& tok = cur();
    if (tok.type != Tok::name) fail("tag name expected");
    const std::string& name = tok.value;
    if (name == "if") return parse_if();
    if (name == "for") return parse_for();
    if (name == "set") return parse_set();
    if (name == "macro") return parse_macro();
    if (name == "call") return parse_call_block();
    if (name == "filter") return parse_filter_block();
    if (name == "with") return parse_with();
    if (name == "print") return parse_print();
    if (name == "break" || name == "continue") {
      auto stmt = std::make_unique<Stmt>(name == "break" ? StmtKind::break_ : StmtKind::continue_, tok.line);
      next();
      return stmt;
    }
    if (name == "generation") {  // transformers' AssistantTracker: the body renders in place
      auto stmt = std::make_unique<Scope>(tok.line);
      next();
      stmt->body = parse_statements({"endgeneration"}, true);
      return stmt;
    }
    if (name == "block" || name == "extends" || name == "include" || name == "import" || name == "from" ||
        name == "autoescape") {
      unsupported_error("the '{}' tag is not supported in chat templates (line {})", name, tok.line);
    }
    fail(fmt::format("Encountered unknown tag {}.", pystr::repr(name)));
  }

  StmtPtr parse_if() {
    auto stmt = std::make_unique<If>(cur().line);
    next();
    while (true) {
      ExprPtr test = parse_tuple(false, false, {}, false);
      Body body = parse_statements({"elif", "else", "endif"}, false);
      stmt->branches.emplace_back(std::move(test), std::move(body));
      const Token& tok = next();
      if (tok.value == "elif") continue;
      if (tok.value == "else") stmt->else_body = parse_statements({"endif"}, true);
      break;
    }
    return stmt;
  }

  StmtPtr parse_for() {
    auto stmt = std::make_unique<For>(cur().line);
    next();
    stmt->target = parse_assign_target(true, false, {"in"}, false);
    expect_name("in");
    stmt->iter = parse_tuple(false, false, {"recursive"}, false);
    if (skip_name("if")) stmt->filter = parse_expression(true);
    stmt->recursive = skip_name("recursive");
    stmt->body = parse_statements({"endfor", "else"}, false);
    if (next().value != "endfor") stmt->else_body = parse_statements({"endfor"}, true);
    return stmt;
  }

  StmtPtr parse_set() {
    int line = cur().line;
    next();
    Target target = parse_assign_target(true, false, {}, true);
    if (skip_op("=")) {
      auto stmt = std::make_unique<Set>(line);
      stmt->target = std::move(target);
      stmt->value = parse_tuple(false, true, {}, false);
      return stmt;
    }
    auto stmt = std::make_unique<SetBlock>(line);
    stmt->target = std::move(target);
    stmt->filter = parse_filter(nullptr, false);
    stmt->body = parse_statements({"endset"}, true);
    return stmt;
  }

  std::vector<MacroParam> parse_signature() {
    std::vector<MacroParam> params;
    bool defaults = false;
    expect_op("(");
    while (!is_op(")")) {
      if (!params.empty()) expect_op(",");
      MacroParam param;
      param.name = expect(Tok::name, "name").value;
      if (skip_op("=")) {
        param.default_value = parse_expression(true);
        defaults = true;
      } else if (defaults) {
        fail("non-default argument follows default argument");
      }
      params.push_back(std::move(param));
    }
    expect_op(")");
    return params;
  }

  StmtPtr parse_macro() {
    auto stmt = std::make_unique<Macro>(cur().line);
    next();
    stmt->name = expect(Tok::name, "name").value;
    stmt->params = parse_signature();
    stmt->body = parse_statements({"endmacro"}, true);
    return stmt;
  }

  StmtPtr parse_call_block() {
    auto stmt = std::make_unique<CallBlock>(cur().line);
    next();
    stmt->caller = std::make_unique<Macro>(stmt->line);
    stmt->caller->name = "";  // jinja2's caller macro is anonymous
    if (is_op("(")) stmt->caller->params = parse_signature();
    stmt->call = parse_expression(true);
    if (stmt->call->kind != ExprKind::call) syntax_error(stmt->line, "expected call");
    stmt->caller->body = parse_statements({"endcall"}, true);
    return stmt;
  }

  StmtPtr parse_filter_block() {
    auto stmt = std::make_unique<FilterBlock>(cur().line);
    next();
    stmt->filter = parse_filter(nullptr, true);
    stmt->body = parse_statements({"endfilter"}, true);
    return stmt;
  }

  StmtPtr parse_with() {
    auto stmt = std::make_unique<With>(cur().line);
    next();
    while (cur().type != Tok::block_end) {
      if (!stmt->assignments.empty()) expect_op(",");
      Target target = parse_assign_target(true, false, {}, false);
      expect_op("=");
      stmt->assignments.emplace_back(std::move(target), parse_expression(true));
    }
    stmt->body = parse_statements({"endwith"}, true);
    return stmt;
  }

  StmtPtr parse_print() {
    auto stmt = std::make_unique<Output>(cur().line);
    next();
    while (cur().type != Tok::block_end) {
      if (!stmt->items.empty()) expect_op(",");
      stmt->items.push_back(parse_expression(true));
    }
    return stmt;
  }

  Target parse_assign_target(bool with_tuple, bool name_only, const std::vector<std::string_view>& extra_end,
                             bool with_namespace) {
    Target target;
    target.line = cur().line;
    if (with_namespace && cur().type == Tok::name && look().type == Tok::op && look().value == ".") {
      target.kind = Target::Kind::ns_attr;
      target.name = next().value;
      next();
      target.attr = expect(Tok::name, "name").value;
      return target;
    }
    if (name_only) {
      target.name = expect(Tok::name, "name").value;
      return target;
    }
    ExprPtr expr = with_tuple ? parse_tuple(true, true, extra_end, false) : parse_primary();
    return to_target(*expr);
  }

  Target to_target(const Expr& expr) {
    Target target;
    target.line = expr.line;
    if (expr.kind == ExprKind::name) {
      target.name = static_cast<const Name&>(expr).name;
      return target;
    }
    if (expr.kind == ExprKind::tuple) {
      target.kind = Target::Kind::tuple;
      for (const auto& item : static_cast<const Sequence&>(expr).items)
        target.items.push_back(to_target(*item));
      return target;
    }
    static const std::array<const char*, 16> kNames = {
        "const", "name",  "getattr", "getitem", "slice",    "call", "filter", "test",
        "unary", "binop", "concat",  "compare", "condexpr", "list", "tuple",  "dict"};
    syntax_error(expr.line, "can't assign to '{}'", kNames[static_cast<size_t>(expr.kind)]);
  }

  // ---- expressions ----
  bool is_tuple_end(const std::vector<std::string_view>& extra_end) const {
    if (cur().type == Tok::variable_end || cur().type == Tok::block_end || is_op(")")) return true;
    return !extra_end.empty() && at_end_token(extra_end);
  }

  ExprPtr parse_tuple(bool simplified, bool with_condexpr, const std::vector<std::string_view>& extra_end,
                      bool explicit_parentheses) {
    int line = cur().line;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      args.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
      if (is_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
      line = cur().line;
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parentheses) fail(fmt::format("Expected an expression, got '{}'", describe(cur())));
    }
    auto tuple = std::make_unique<Sequence>(ExprKind::tuple, line);
    tuple->items = std::move(args);
    return tuple;
  }

  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  ExprPtr parse_condexpr() {
    DepthGuard guard(*this);
    int line = cur().line;
    ExprPtr expr1 = parse_or();
    while (skip_name("if")) {
      auto cond = std::make_unique<CondExpr>(line);
      cond->test = parse_or();
      if (skip_name("else")) cond->else_expr = parse_condexpr();
      cond->then_expr = std::move(expr1);
      expr1 = std::move(cond);
      line = cur().line;
    }
    return expr1;
  }

  ExprPtr parse_or() {
    int line = cur().line;
    ExprPtr left = parse_and();
    while (skip_name("or"))
      left = std::make_unique<Binary>(BinaryOp::or_, std::move(left), parse_and(), line);
    return left;
  }

  ExprPtr parse_and() {
    int line = cur().line;
    ExprPtr left = parse_not();
    while (skip_name("and"))
      left = std::make_unique<Binary>(BinaryOp::and_, std::move(left), parse_not(), line);
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this);
      int line = next().line;
      return std::make_unique<Unary>(UnaryOp::not_, parse_not(), line);
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int line = cur().line;
    ExprPtr expr = parse_math1();
    std::unique_ptr<Compare> cmp;
    while (true) {
      std::optional<CompareOp> op;
      if (cur().type == Tok::op) {
        const std::string& v = cur().value;
        if (v == "==")
          op = CompareOp::eq;
        else if (v == "!=")
          op = CompareOp::ne;
        else if (v == "<")
          op = CompareOp::lt;
        else if (v == "<=")
          op = CompareOp::lteq;
        else if (v == ">")
          op = CompareOp::gt;
        else if (v == ">=")
          op = CompareOp::gteq;
        if (op) next();
      } else if (is_name("in")) {
        next();
        op = CompareOp::in;
      } else if (is_name("not") && look().type == Tok::name && look().value == "in") {
        next();
        next();
        op = CompareOp::notin;
      }
      if (!op) break;
      if (!cmp) cmp = std::make_unique<Compare>(std::move(expr), line);
      cmp->rest.emplace_back(*op, parse_math1());
    }
    if (cmp) return cmp;
    return expr;
  }

  ExprPtr parse_math1() {
    int line = cur().line;
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      BinaryOp op = next().value == "+" ? BinaryOp::add : BinaryOp::sub;
      left = std::make_unique<Binary>(op, std::move(left), parse_concat(), line);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_concat() {
    int line = cur().line;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto concat = std::make_unique<Concat>(line);
    concat->parts.push_back(std::move(first));
    while (skip_op("~")) concat->parts.push_back(parse_math2());
    return concat;
  }

  ExprPtr parse_math2() {
    int line = cur().line;
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string& v = next().value;
      BinaryOp op = v == "*"    ? BinaryOp::mul
                    : v == "/"  ? BinaryOp::div
                    : v == "//" ? BinaryOp::floordiv
                                : BinaryOp::mod;
      left = std::make_unique<Binary>(op, std::move(left), parse_pow(), line);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_pow() {
    int line = cur().line;
    ExprPtr left = parse_unary(true);
    while (skip_op("**")) {
      left = std::make_unique<Binary>(BinaryOp::pow, std::move(left), parse_unary(true), line);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    int line = cur().line;
    ExprPtr node;
    if (is_op("-")) {
      next();
      node = std::make_unique<Unary>(UnaryOp::neg, parse_unary(false), line);
    } else if (is_op("+")) {
      next();
      node = std::make_unique<Unary>(UnaryOp::pos, parse_unary(false), line);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    DepthGuard guard(*this);
    const Token& tok = cur();
    int line = tok.line;
    if (tok.type == Tok::name) {
      const std::string& v = tok.value;
      ExprPtr node;
      if (v == "true" || v == "True" || v == "false" || v == "False") {
        node = std::make_unique<Constant>(Value::boolean(v == "true" || v == "True"), line);
      } else if (v == "none" || v == "None") {
        node = std::make_unique<Constant>(Value::none(), line);
      } else {
        node = std::make_unique<Name>(v, line);
      }
      next();
      return node;
    }
    if (tok.type == Tok::string) {
      std::string text;
      while (cur().type == Tok::string) text += next().value;
      return std::make_unique<Constant>(Value::string(std::move(text)), line);
    }
    if (tok.type == Tok::integer) return std::make_unique<Constant>(Value::integer(next().int_value), line);
    if (tok.type == Tok::floating)
      return std::make_unique<Constant>(Value::floating(next().float_value), line);
    if (is_op("(")) {
      next();
      ExprPtr node = parse_tuple(false, true, {}, true);
      expect_op(")");
      return node;
    }
    if (is_op("[")) {
      next();
      auto list = std::make_unique<Sequence>(ExprKind::list, line);
      while (!is_op("]")) {
        if (!list->items.empty()) expect_op(",");
        if (is_op("]")) break;
        list->items.push_back(parse_expression(true));
      }
      expect_op("]");
      return list;
    }
    if (is_op("{")) {
      next();
      auto dict = std::make_unique<DictLiteral>(line);
      while (!is_op("}")) {
        if (!dict->items.empty()) expect_op(",");
        if (is_op("}")) break;
        ExprPtr key = parse_expression(true);
        expect_op(":");
        dict->items.emplace_back(std::move(key), parse_expression(true));
      }
      expect_op("}");
      return dict;
    }
    fail(fmt::format("unexpected '{}'", describe(tok)));
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        node = parse_filter(std::move(node), false);
      } else if (is_name("is")) {
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    DepthGuard guard(*this);
    const Token& tok = next();
    int line = tok.line;
    if (tok.value == ".") {
      const Token& attr = next();
      if (attr.type == Tok::name) return std::make_unique<GetAttr>(std::move(node), attr.value, line);
      if (attr.type != Tok::integer) syntax_error(attr.line, "expected name or number");
      return std::make_unique<GetItem>(
          std::move(node), std::make_unique<Constant>(Value::integer(attr.int_value), line), line);
    }
    std::vector<ExprPtr> args;
    while (!is_op("]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    expect_op("]");
    if (args.size() == 1) {
      auto item = std::make_unique<GetItem>(std::move(node), std::move(args[0]), line);
      if (item->key->kind == ExprKind::slice) {
        const auto& s = static_cast<const Slice&>(*item->key);
        item->constant_slice = is_literal(item->obj.get()) && is_literal(s.start.get()) &&
                               is_literal(s.stop.get()) && is_literal(s.step.get());
      }
      return item;
    }
    auto tuple = std::make_unique<Sequence>(ExprKind::tuple, line);
    tuple->items = std::move(args);
    return std::make_unique<GetItem>(std::move(node), std::move(tuple), line);
  }

  ExprPtr parse_subscribed() {
    int line = cur().line;
    auto slice = std::make_unique<Slice>(line);
    if (is_op(":")) {
      next();
    } else {
      ExprPtr node = parse_expression(true);
      if (!is_op(":")) return node;
      next();
      slice->start = std::move(node);
    }
    auto at_slice_end = [&] { return is_op("]") || is_op(","); };
    if (!is_op(":") && !at_slice_end()) slice->stop = parse_expression(true);
    if (is_op(":")) {
      next();
      if (!at_slice_end()) slice->step = parse_expression(true);
    }
    return slice;
  }

  Arguments parse_call_args() {
    Arguments args;
    int line = cur().line;
    expect_op("(");
    bool require_comma = false;
    auto ensure = [&](bool ok) {
      if (!ok) syntax_error(line, "invalid syntax for function call expression");
    };
    while (!is_op(")")) {
      if (require_comma) {
        expect_op(",");
        if (is_op(")")) break;
      }
      if (is_op("*")) {
        ensure(!args.star_args && !args.star_kwargs);
        next();
        args.star_args = parse_expression(true);
      } else if (is_op("**")) {
        ensure(!args.star_kwargs);
        next();
        args.star_kwargs = parse_expression(true);
      } else if (cur().type == Tok::name && look().type == Tok::op && look().value == "=") {
        ensure(!args.star_kwargs);
        std::string key = next().value;
        next();
        args.keyword.emplace_back(std::move(key), parse_expression(true));
      } else {
        ensure(!args.star_args && !args.star_kwargs && args.keyword.empty());
        args.positional.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect_op(")");
    return args;
  }

  ExprPtr parse_call(ExprPtr node) {
    auto call = std::make_unique<Call>(std::move(node), cur().line);
    call->args = parse_call_args();
    return call;
  }

  std::string dotted_name() {
    std::string name = expect(Tok::name, "name").value;
    while (skip_op(".")) name += "." + expect(Tok::name, "name").value;
    return name;
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    while (is_op("|") || start_inline) {
      if (!start_inline) next();
      int line = cur().line;
      auto filter = std::make_unique<FilterOrTest>(ExprKind::filter, std::move(node), dotted_name(), line);
      filter->known = is_known_filter(filter->name);
      if (is_op("(")) filter->args = parse_call_args();
      node = std::move(filter);
      start_inline = false;
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    int line = next().line;
    bool negated = skip_name("not");
    auto test = std::make_unique<FilterOrTest>(ExprKind::test, std::move(node), dotted_name(), line);
    test->known = is_known_test(test->name);
    Tok t = cur().type;
    if (is_op("(")) {
      test->args = parse_call_args();
    } else if ((t == Tok::name || t == Tok::string || t == Tok::integer || t == Tok::floating || is_op("(") ||
                is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("You cannot chain multiple tests with is");
      test->args.positional.push_back(parse_postfix(parse_primary()));
    }
    if (negated) return std::make_unique<Unary>(UnaryOp::not_, std::move(test), line);
    return test;
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
};

// Whether jinja2's optimizer folds `e` to a constant (literals and operators on them; no names or calls).
bool is_literal(const Expr* e) {
  if (!e) return true;
  switch (e->kind) {
    case ExprKind::constant:
      return true;
    case ExprKind::list:
    case ExprKind::tuple:
      for (const auto& item : static_cast<const Sequence&>(*e).items) {
        if (!is_literal(item.get())) return false;
      }
      return true;
    case ExprKind::unary:
      return is_literal(static_cast<const Unary&>(*e).operand.get());
    case ExprKind::binary:
      return is_literal(static_cast<const Binary&>(*e).left.get()) &&
             is_literal(static_cast<const Binary&>(*e).right.get());
    case ExprKind::concat:
      for (const auto& p : static_cast<const Concat&>(*e).parts) {
        if (!is_literal(p.get())) return false;
      }
      return true;
    default:
      return false;
  }
}

}  // namespace

ast::Template parse(std::string_view source, const LexerOptions& options) {
  Parser parser(tokenize(source, options));
  ast::Template tmpl = parser.parse_template();
  check_template(tmpl);
  analyze_scopes(tmpl);
  return tmpl;
}

}  // namespace keel::chat::jinja
