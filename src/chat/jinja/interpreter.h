// Runs a parsed template: statements, expressions, scopes, macros and loops with jinja2's semantics (as
// compiled by jinja2 for ImmutableSandboxedEnvironment). Scopes: a `for` iteration, a macro call and `with`
// get a child frame whose writes stay inside it; `if` does not; names resolve up the chain at the time they
// are read (a macro sees the defining scope's current values, as jinja2's closures do).
#pragma once
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/jinja/ast.h"
#include "chat/jinja/budget.h"
#include "chat/jinja/value.h"

namespace keel::chat::jinja {

// A frame's variables: a few names each (a loop iteration binds its target and `loop`), so a flat vector.
class VarMap {
 public:
  Value& operator[](const std::string& name);  // finds or appends
  const Value* find(const std::string& name) const;
  void clear() { entries_.clear(); }

 private:
  std::vector<std::pair<std::string, Value>> entries_;
};

struct Frame {
  VarMap vars;
  std::shared_ptr<Frame> parent;
  const Value* find(const std::string& name) const;
};
using FramePtr = std::shared_ptr<Frame>;

struct RenderOptions {
  RenderLimits limits;
  // The clock strftime_now() reads (local time, as transformers' datetime.now()). Unset: now. Tests pin it.
  std::optional<std::tm> now;
};

class Interpreter {
 public:
  Interpreter(const RenderOptions& options, RenderBudget& budget) : options_(options), budget_(budget) {}
  ~Interpreter();  // breaks the reference cycles a render can make (a frame holding a macro that holds it)
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders `body` with `globals` as the outermost frame (context variables, then builtins). The caller
  // installs the budget (BudgetScope).
  std::string render(const ast::Template& tmpl, FramePtr globals);

  // For filters, tests and builtins that call back into the engine.
  Value call(const Value& callee, CallArgs& args);
  Value apply_filter(const std::string& name, const Value& input, CallArgs& args, int line);
  bool apply_test(const std::string& name, const Value& input, CallArgs& args, int line);
  const RenderOptions& options() const { return options_; }
  RenderBudget& budget() { return budget_; }
  // Objects that may end up referring to themselves (namespaces), cleared when the render ends.
  void track(std::shared_ptr<Object> obj) { tracked_objects_.push_back(std::move(obj)); }

  enum class Flow : uint8_t { normal, break_, continue_ };

 private:
  friend class LoopContext;

  Flow exec_body(const ast::Body& body, const FramePtr& frame, std::string& out);
  Flow exec(const ast::Stmt& stmt, const FramePtr& frame, std::string& out);
  void exec_set(const ast::Target& target, Value value, const FramePtr& frame);
  Value make_macro(const ast::Macro& macro, const FramePtr& frame);
  Value call_macro(const ast::Macro& macro, const FramePtr& def_frame, CallArgs& args);
  Value apply_filter_chain(const ast::Expr& filter, const Value& input, const FramePtr& frame);

  Value eval(const ast::Expr& expr, const FramePtr& frame);
  Value eval_call(const ast::Call& call, const FramePtr& frame);
  CallArgs eval_args(const ast::Arguments& args, const FramePtr& frame);
  Value run_filter(const ast::FilterOrTest& node, const Value& input, const FramePtr& frame);
  void append_output(std::string& out, const std::string& text);
  void run_loop(const ast::For& node, const FramePtr& frame, const Value& iterable, int depth,
                std::string& out);

  struct CallDepth {
    explicit CallDepth(Interpreter& i);
    ~CallDepth() { --interp.call_depth_; }
    Interpreter& interp;
  };

  const RenderOptions& options_;
  RenderBudget& budget_;
  std::vector<FramePtr> tracked_frames_;  // frames that hold a macro, which holds the frame
  std::vector<std::shared_ptr<Object>> tracked_objects_;
  int call_depth_ = 0;
  int line_ = 0;  // line of the statement running, for error messages
};

}  // namespace keel::chat::jinja
