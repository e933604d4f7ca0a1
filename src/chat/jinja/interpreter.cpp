#include "chat/jinja/interpreter.h"

#include "chat/jinja/builtins.h"
#include "chat/jinja/errors.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/pystr.h"

namespace keel::chat::jinja {

using namespace ast;

namespace {

// A frame that starts with `undefined` names bound to Undefined (see ast::UndefinedAtStart).
FramePtr child_frame(const FramePtr& parent, const UndefinedAtStart& undefined) {
  auto f = std::make_shared<Frame>();
  f->parent = parent;
  for (const auto& name : undefined) f->vars[name] = undefined_name(name);
  return f;
}

}  // namespace

Value& VarMap::operator[](const std::string& name) {
  for (auto& [k, v] : entries_) {
    if (k == name) return v;
  }
  if (entries_.empty()) entries_.reserve(4);
  return entries_.emplace_back(name, Value()).second;
}

const Value* VarMap::find(const std::string& name) const {
  for (const auto& [k, v] : entries_) {
    if (k == name) return &v;
  }
  return nullptr;
}

const Value* Frame::find(const std::string& name) const {
  for (const Frame* f = this; f; f = f->parent.get()) {
    if (const Value* v = f->vars.find(name)) return v;
  }
  return nullptr;
}

// jinja2's LoopContext: `loop.index`, `loop.cycle(...)`, and `loop(children)` in a recursive loop.
class LoopContext : public Object {
 public:
  LoopContext(const For& node, const FramePtr& frame, std::vector<Value> items, int depth0)
      : node_(&node), frame_(frame), items_(std::move(items)), depth0_(depth0) {}

  std::string type_name() const override { return "LoopContext"; }
  std::string repr() const override { return fmt::format("<LoopContext {}/{}>", index0 + 1, items_.size()); }
  bool is_callable() const override { return true; }
  const std::vector<Value>& items() const { return items_; }

  std::optional<Value> get_attr(std::string_view name) const override {
    auto n = static_cast<int64_t>(items_.size());
    auto i = static_cast<int64_t>(index0);
    if (name == "index") return Value::integer(i + 1);
    if (name == "index0") return Value::integer(i);
    if (name == "revindex") return Value::integer(n - i);
    if (name == "revindex0") return Value::integer(n - i - 1);
    if (name == "first") return Value::boolean(i == 0);
    if (name == "last") return Value::boolean(i == n - 1);
    if (name == "length") return Value::integer(n);
    if (name == "depth") return Value::integer(depth0_ + 1);
    if (name == "depth0") return Value::integer(depth0_);
    if (name == "previtem") {
      return i > 0 ? items_[index0 - 1] : Value::undefined("there is no previous item");
    }
    if (name == "nextitem") {
      return i + 1 < n ? items_[index0 + 1] : Value::undefined("there is no next item");
    }
    if (name == "cycle") {
      size_t at = index0;
      return Value::callable("cycle", [at](Interpreter&, CallArgs& args) {
        if (args.positional.empty()) type_error("no items for cycling given");
        return args.positional[at % args.positional.size()];
      });
    }
    if (name == "changed") {
      auto self = std::static_pointer_cast<LoopContext>(const_cast<LoopContext*>(this)->shared_from_this());
      return Value::callable("changed", [self](Interpreter&, CallArgs& args) {
        Value now = Value::list(args.positional, ListFlavor::tuple);
        if (self->has_last_ && equals(self->last_changed_, now)) return Value::boolean(false);
        self->last_changed_ = now;
        self->has_last_ = true;
        return Value::boolean(true);
      });
    }
    return std::nullopt;
  }

  Value call(Interpreter& interp, CallArgs& args) override {
    if (!node_->recursive)
      type_error("Tried to call non recursive loop. Maybe you forgot the 'recursive' modifier.");
    if (args.positional.size() != 1 || !args.keyword.empty()) type_error("loop() takes exactly one argument");
    FramePtr frame = frame_.lock();
    if (!frame) unsupported_error("calling a recursive loop's `loop` after the loop has ended");
    Interpreter::CallDepth depth(interp);
    std::string out;
    interp.run_loop(*node_, frame, args.positional[0], depth0_ + 1, out);
    return Value::string(std::move(out));
  }

  size_t index0 = 0;

 private:
  const For* node_;
  std::weak_ptr<Frame> frame_;  // where the loop runs; weak, so a loop kept in a namespace makes no cycle
  std::vector<Value> items_;
  int depth0_;
  Value last_changed_;
  bool has_last_ = false;
};

Interpreter::CallDepth::CallDepth(Interpreter& i) : interp(i) {
  if (++interp.call_depth_ > interp.options_.limits.max_call_depth) {
    --interp.call_depth_;
    limit_error("macro calls or recursive loops nest deeper than {}", interp.options_.limits.max_call_depth);
  }
}

Interpreter::~Interpreter() {
  for (auto& f : tracked_frames_) f->vars.clear();
  for (auto& o : tracked_objects_) o->clear_references();
}

std::string Interpreter::render(const Template& tmpl, FramePtr globals) {
  std::string out;
  for (const auto& name : tmpl.undefined) globals->vars[name] = undefined_name(name);
  try {
    exec_body(tmpl.body, globals, out);
  } catch (const TemplateError& e) {
    if (e.message().find("(template line") != std::string::npos) throw;
    throw TemplateError(e.code(), e.python_type(), fmt::format("{} (template line {})", e.message(), line_));
  }
  return out;
}

void Interpreter::append_output(std::string& out, const std::string& text) {
  out += text;
  if (out.size() > options_.limits.max_output_bytes) {
    limit_error("the rendered text is over the limit of {} bytes", options_.limits.max_output_bytes);
  }
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const FramePtr& frame, std::string& out) {
  for (const auto& stmt : body) {
    Flow flow = exec(*stmt, frame, out);
    if (flow != Flow::normal) return flow;
  }
  return Flow::normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& stmt, const FramePtr& frame, std::string& out) {
  line_ = stmt.line;
  switch (stmt.kind) {
    case StmtKind::output:
      for (const auto& item : static_cast<const Output&>(stmt).items) {
        if (item->kind == ExprKind::constant) {
          append_output(out, to_str(static_cast<const Constant&>(*item).value));
        } else {
          append_output(out, to_str(eval(*item, frame)));
        }
      }
      return Flow::normal;
    case StmtKind::if_: {
      const auto& node = static_cast<const If&>(stmt);
      for (const auto& [test, body] : node.branches) {
        if (truthy(eval(*test, frame))) return exec_body(body, frame, out);
      }
      return exec_body(node.else_body, frame, out);
    }
    case StmtKind::for_: {
      const auto& node = static_cast<const For&>(stmt);
      Value iterable = eval(*node.iter, frame);
      run_loop(node, frame, iterable, 0, out);
      return Flow::normal;
    }
    case StmtKind::set: {
      const auto& node = static_cast<const Set&>(stmt);
      exec_set(node.target, eval(*node.value, frame), frame);
      return Flow::normal;
    }
    case StmtKind::set_block: {
      const auto& node = static_cast<const SetBlock&>(stmt);
      auto inner = child_frame(frame, node.undefined);
      std::string text;
      // A break/continue in the body leaves the enclosing loop's iteration at once (jinja2 compiles the body
      // inline): nothing is assigned or printed.
      if (Flow flow = exec_body(node.body, inner, text); flow != Flow::normal) return flow;
      Value value = Value::string(std::move(text));
      if (node.filter) value = apply_filter_chain(*node.filter, value, inner);
      exec_set(node.target, std::move(value), frame);
      return Flow::normal;
    }
    case StmtKind::macro: {
      const auto& node = static_cast<const Macro&>(stmt);
      frame->vars[node.name] = make_macro(node, frame);
      return Flow::normal;
    }
    case StmtKind::call_block: {
      const auto& node = static_cast<const CallBlock&>(stmt);
      const auto& call = static_cast<const Call&>(*node.call);
      Value callee = eval(*call.callee, frame);
      CallArgs args = eval_args(call.args, frame);
      args.keyword.emplace_back("caller", make_macro(*node.caller, frame));
      append_output(out, to_str(this->call(callee, args)));
      return Flow::normal;
    }
    case StmtKind::filter_block: {
      const auto& node = static_cast<const FilterBlock&>(stmt);
      auto inner = child_frame(frame, node.undefined);
      std::string text;
      if (Flow flow = exec_body(node.body, inner, text); flow != Flow::normal) return flow;
      append_output(out, to_str(apply_filter_chain(*node.filter, Value::string(std::move(text)), inner)));
      return Flow::normal;
    }
    case StmtKind::with: {
      const auto& node = static_cast<const With&>(stmt);
      std::vector<Value> values;
      for (const auto& [target, expr] : node.assignments) values.push_back(eval(*expr, frame));
      auto inner = child_frame(frame, node.undefined);
      for (size_t i = 0; i < values.size(); ++i) exec_set(node.assignments[i].first, values[i], inner);
      return exec_body(node.body, inner, out);
    }
    case StmtKind::break_:
      return Flow::break_;
    case StmtKind::continue_:
      return Flow::continue_;
    case StmtKind::scope: {
      const auto& node = static_cast<const Scope&>(stmt);
      auto inner = child_frame(frame, node.undefined);
      exec_body(node.body, inner, out);
      return Flow::normal;
    }
  }
  return Flow::normal;
}

void Interpreter::run_loop(const For& node, const FramePtr& frame, const Value& iterable, int depth,
                           std::string& out) {
  std::vector<Value> items = iterate(iterable);
  if (node.filter) {
    std::vector<Value> kept;
    for (auto& item : items) {
      budget_.charge_steps(1);
      auto test_frame = std::make_shared<Frame>();
      test_frame->parent = frame;
      exec_set(node.target, item, test_frame);
      if (truthy(eval(*node.filter, test_frame))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  auto loop = std::make_shared<LoopContext>(node, frame, std::move(items), depth);
  const std::vector<Value>& loop_items = loop->items();
  Value loop_value = Value::object(loop);
  // jinja2 runs `else` unless an iteration ran to its end (a `break` or `continue` in the first one counts as
  // none).
  bool completed_one = false;
  for (size_t i = 0; i < loop_items.size(); ++i) {
    budget_.charge_steps(1);
    auto iter_frame = child_frame(frame, node.body_undefined);
    exec_set(node.target, loop_items[i], iter_frame);
    loop->index0 = i;
    iter_frame->vars["loop"] = loop_value;
    Flow flow = exec_body(node.body, iter_frame, out);
    if (flow == Flow::break_) break;
    if (flow == Flow::continue_) continue;
    completed_one = true;
  }
  if (!completed_one && !node.else_body.empty()) {
    auto else_frame = child_frame(frame, node.else_undefined);
    exec_body(node.else_body, else_frame, out);
  }
}

void Interpreter::exec_set(const Target& target, Value value, const FramePtr& frame) {
  switch (target.kind) {
    case Target::Kind::name:
      frame->vars[target.name] = std::move(value);
      return;
    case Target::Kind::ns_attr: {
      const Value* ns = frame->find(target.name);
      if (!ns || !ns->is_object() || !ns->object_ptr()->is_namespace()) {
        raise_error("TemplateRuntimeError", "cannot assign attribute on non-namespace object");
      }
      static_cast<Namespace&>(*ns->object_ptr()).set(target.attr, std::move(value));
      return;
    }
    case Target::Kind::tuple: {
      std::vector<Value> items = iterate(value);
      size_t want = target.items.size();
      if (items.size() > want) value_error("too many values to unpack (expected {})", want);
      if (items.size() < want)
        value_error("not enough values to unpack (expected {}, got {})", want, items.size());
      for (size_t i = 0; i < want; ++i) exec_set(target.items[i], std::move(items[i]), frame);
      return;
    }
  }
}

Value Interpreter::make_macro(const Macro& macro, const FramePtr& frame) {
  tracked_frames_.push_back(frame);
  const Macro* node = &macro;
  FramePtr def_frame = frame;
  return Value::callable(
      macro.name,
      [node, def_frame](Interpreter& interp, CallArgs& args) {
        return interp.call_macro(*node, def_frame, args);
      },
      true);
}

Value Interpreter::call_macro(const Macro& macro, const FramePtr& def_frame, CallArgs& args) {
  CallDepth depth(*this);
  budget_.charge_steps(1);
  auto frame = child_frame(def_frame, macro.undefined);
  size_t n = macro.params.size();
  const std::string label =
      macro.name.empty() ? "None" : pystr::repr(macro.name);  // a call block's caller: None
  if (args.positional.size() > n && !macro.uses_varargs) {
    type_error("macro {} takes not more than {} argument(s)", label, n);
  }
  auto& kwargs = args.keyword;
  auto pop_kwarg = [&](const std::string& name) -> std::optional<Value> {
    for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
      if (it->first == name) {
        Value v = std::move(it->second);
        kwargs.erase(it);
        return v;
      }
    }
    return std::nullopt;
  };
  std::vector<std::optional<Value>> bound(n);
  bool found_caller = false;
  for (size_t i = 0; i < n && i < args.positional.size(); ++i) bound[i] = args.positional[i];
  if (args.positional.size() < n) {
    for (size_t i = args.positional.size(); i < n; ++i) {
      bound[i] = pop_kwarg(macro.params[i].name);
      found_caller |= macro.params[i].name == "caller";
    }
  } else {
    for (const auto& p : macro.params) found_caller |= p.name == "caller";
  }
  for (size_t i = 0; i < n; ++i) {
    if (bound[i]) frame->vars[macro.params[i].name] = *bound[i];
  }
  for (size_t i = 0; i < n; ++i) {
    if (bound[i]) continue;
    const auto& p = macro.params[i];
    frame->vars[p.name] =
        p.default_value ? eval(*p.default_value, frame)
                        : Value::undefined(fmt::format("parameter {} was not provided", pystr::repr(p.name)));
  }
  if (macro.uses_caller && !found_caller) {
    auto caller = pop_kwarg("caller");
    frame->vars["caller"] = caller ? *caller : Value::undefined("No caller defined");
  }
  if (macro.uses_kwargs) {
    Dict d;
    for (auto& [k, v] : kwargs) d.set(Value::string(k), v);
    frame->vars["kwargs"] = Value::dict(std::move(d));
  } else if (!kwargs.empty()) {
    for (const auto& kw : kwargs) {
      if (kw.first == "caller") {
        type_error(
            "macro {} was invoked with two values for the special caller argument. This is most likely a "
            "bug.",
            label);
      }
    }
    type_error("macro {} takes no keyword argument {}", label, pystr::repr(kwargs.front().first));
  }
  if (macro.uses_varargs) {
    std::vector<Value> extra;
    for (size_t i = n; i < args.positional.size(); ++i) extra.push_back(args.positional[i]);
    frame->vars["varargs"] = Value::list(std::move(extra), ListFlavor::tuple);
  }
  std::string out;
  int saved_line = line_;
  exec_body(macro.body, frame, out);
  line_ = saved_line;
  return Value::string(std::move(out));
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  budget_.charge_steps(1);
  switch (callee.kind()) {
    case Kind::undefined:
      fail_undefined(callee);
    case Kind::callable:
      return callee.callable_data().call(*this, args);
    case Kind::object:
      if (callee.object_ptr()->is_callable()) return callee.object_ptr()->call(*this, args);
      break;
    default:
      break;
  }
  type_error("'{}' object is not callable", type_name(callee));
}

Value Interpreter::apply_filter(const std::string& name, const Value& input, CallArgs& args, int line) {
  FilterFn fn = find_filter(name);
  if (!fn)
    raise_error("TemplateRuntimeError", "No filter named {} found. (line {})", pystr::repr(name), line);
  budget_.charge_steps(1);
  return fn(*this, input, args);
}

bool Interpreter::apply_test(const std::string& name, const Value& input, CallArgs& args, int line) {
  TestFn fn = find_test(name);
  if (!fn) raise_error("TemplateRuntimeError", "No test named {} found. (line {})", pystr::repr(name), line);
  budget_.charge_steps(1);
  return fn(*this, input, args);
}

Value Interpreter::run_filter(const FilterOrTest& node, const Value& input, const FramePtr& frame) {
  CallArgs args = eval_args(node.args, frame);
  return apply_filter(node.name, input, args, node.line);
}

Value Interpreter::apply_filter_chain(const Expr& filter, const Value& input, const FramePtr& frame) {
  const auto& node = static_cast<const FilterOrTest&>(filter);
  Value base = node.node ? apply_filter_chain(*node.node, input, frame) : input;
  return run_filter(node, base, frame);
}

CallArgs Interpreter::eval_args(const Arguments& args, const FramePtr& frame) {
  CallArgs out;
  for (const auto& p : args.positional) out.positional.push_back(eval(*p, frame));
  for (const auto& [k, v] : args.keyword) out.keyword.emplace_back(k, eval(*v, frame));
  if (args.star_args) {
    for (auto& v : iterate(eval(*args.star_args, frame))) out.positional.push_back(std::move(v));
  }
  if (args.star_kwargs) {
    Value kw = eval(*args.star_kwargs, frame);
    if (!kw.is_dict()) type_error("argument after ** must be a mapping, not {}", type_name(kw));
    for (const auto& [k, v] : kw.dict_data().entries()) {
      if (!k.is_string()) type_error("keywords must be strings");
      out.keyword.emplace_back(k.str(), v);
    }
  }
  return out;
}

Value Interpreter::eval_call(const Call& call, const FramePtr& frame) {
  Value callee = eval(*call.callee, frame);
  CallArgs args = eval_args(call.args, frame);
  return this->call(callee, args);
}

Value Interpreter::eval(const Expr& expr, const FramePtr& frame) {
  switch (expr.kind) {
    case ExprKind::constant:
      return static_cast<const Constant&>(expr).value;
    case ExprKind::name: {
      const auto& name = static_cast<const Name&>(expr).name;
      const Value* v = frame->find(name);
      return v ? *v : undefined_name(name);
    }
    case ExprKind::getattr: {
      const auto& node = static_cast<const GetAttr&>(expr);
      return get_attr(eval(*node.obj, frame), node.attr);
    }
    case ExprKind::getitem: {
      const auto& node = static_cast<const GetItem&>(expr);
      Value obj = eval(*node.obj, frame);
      if (node.key->kind == ExprKind::slice) {
        const auto& s = static_cast<const Slice&>(*node.key);
        auto part = [&](const ExprPtr& p) { return p ? eval(*p, frame) : Value::none(); };
        Value start = part(s.start), stop = part(s.stop), step = part(s.step);
        if (node.constant_slice) {
          try {
            return slice(obj, start, stop, step);
          } catch (const TemplateError& e) {
            if (e.python_type() != "TypeError") throw;
            return undefined_element(obj, Value::string("slice"));
          }
        }
        return slice(obj, start, stop, step);
      }
      return get_item(obj, eval(*node.key, frame));
    }
    case ExprKind::slice:
      type_error("a slice is only allowed inside []");
    case ExprKind::call:
      return eval_call(static_cast<const Call&>(expr), frame);
    case ExprKind::filter: {
      const auto& node = static_cast<const FilterOrTest&>(expr);
      return run_filter(node, eval(*node.node, frame), frame);
    }
    case ExprKind::test: {
      const auto& node = static_cast<const FilterOrTest&>(expr);
      Value input = eval(*node.node, frame);
      CallArgs args = eval_args(node.args, frame);
      return Value::boolean(apply_test(node.name, input, args, node.line));
    }
    case ExprKind::unary: {
      const auto& node = static_cast<const Unary&>(expr);
      Value v = eval(*node.operand, frame);
      switch (node.op) {
        case UnaryOp::not_:
          return Value::boolean(!truthy(v));
        case UnaryOp::neg:
          return negate(v);
        case UnaryOp::pos:
          return unary_plus(v);
      }
      return v;
    }
    case ExprKind::binary: {
      const auto& node = static_cast<const Binary&>(expr);
      Value left = eval(*node.left, frame);
      if (node.op == BinaryOp::and_) return truthy(left) ? eval(*node.right, frame) : left;
      if (node.op == BinaryOp::or_) return truthy(left) ? left : eval(*node.right, frame);
      return arithmetic(node.op, left, eval(*node.right, frame));
    }
    case ExprKind::concat: {
      std::string out;
      for (const auto& part : static_cast<const Concat&>(expr).parts) {
        out += to_str(eval(*part, frame));
        if (out.size() > options_.limits.max_output_bytes) budget_.check_string(out.size());
      }
      return Value::string(std::move(out));
    }
    case ExprKind::compare: {
      const auto& node = static_cast<const Compare&>(expr);
      Value left = eval(*node.first, frame);
      for (const auto& [op, rhs] : node.rest) {
        Value right = eval(*rhs, frame);
        if (!compare(op, left, right)) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case ExprKind::cond: {
      const auto& node = static_cast<const CondExpr&>(expr);
      if (truthy(eval(*node.test, frame))) return eval(*node.then_expr, frame);
      if (node.else_expr) return eval(*node.else_expr, frame);
      return Value::undefined(fmt::format(
          "the inline if-expression on line {} evaluated to false and no else section was defined.",
          node.line));
    }
    case ExprKind::list:
    case ExprKind::tuple: {
      const auto& node = static_cast<const Sequence&>(expr);
      std::vector<Value> items;
      items.reserve(node.items.size());
      for (const auto& item : node.items) items.push_back(eval(*item, frame));
      return Value::list(std::move(items),
                         expr.kind == ExprKind::tuple ? ListFlavor::tuple : ListFlavor::list);
    }
    case ExprKind::dict: {
      Dict d;
      for (const auto& [k, v] : static_cast<const DictLiteral&>(expr).items) {
        Value key = eval(*k, frame);
        d.set(std::move(key), eval(*v, frame));
      }
      return Value::dict(std::move(d));
    }
  }
  return Value();
}

}  // namespace keel::chat::jinja
