// What one render may spend, so that no template (or context) can hang or exhaust the server: output and
// string bytes, work steps, call depth and container nesting. Values charge the budget of the render running
// on their thread (a RenderBudget installed by BudgetScope); outside a render (parsing, tests) nothing is
// charged.
#pragma once
#include <cstddef>
#include <cstdint>

namespace keel::chat::jinja {

struct RenderLimits {
  size_t max_output_bytes = size_t{64} << 20;  // the rendered prompt, and any one string built on the way
  size_t max_list_items = size_t{1} << 22;     // any one list built on the way
  // Loop iterations + calls + list items built + string bytes built / 64 + items compared or searched: one
  // step is tens to a few hundred nanoseconds, so the limit stops a runaway template within a few seconds.
  int64_t max_steps = 20'000'000;
  int max_call_depth =
      200;  // nested macro calls and recursive loops (jinja2 stops near Python's 1000 frames)
};

// Containers nest at most this deep (from JSON input or built by a template), which bounds every recursive
// walk (repr, tojson, equality, destruction) well inside a thread's stack.
inline constexpr int kMaxValueDepth = 400;

class RenderBudget {
 public:
  explicit RenderBudget(const RenderLimits& limits) : limits_(limits) {}
  const RenderLimits& limits() const { return limits_; }
  void charge_steps(int64_t n);
  void check_string(size_t bytes);  // a string of `bytes` is being built
  void check_list(size_t items);
  int64_t steps_used() const { return steps_; }

 private:
  RenderLimits limits_;
  int64_t steps_ = 0;
};

RenderBudget* current_budget();

// Checks, before building it, a string of `bytes` (or a list of `items`) against this thread's render budget.
inline void check_result_size(size_t bytes) {
  if (auto* b = current_budget()) b->check_string(bytes);
}
inline void check_result_items(size_t items) {
  if (auto* b = current_budget()) b->check_list(items);
}
// A width or count from the template, as a size to check (negative: 0).
inline size_t as_size(int64_t n) {
  return n < 0 ? 0 : static_cast<size_t>(n);
}

// Installs `budget` for this thread for the scope's lifetime (restoring the previous one after).
class BudgetScope {
 public:
  explicit BudgetScope(RenderBudget* budget);
  ~BudgetScope();
  BudgetScope(const BudgetScope&) = delete;
  BudgetScope& operator=(const BudgetScope&) = delete;

 private:
  RenderBudget* previous_;
};

}  // namespace keel::chat::jinja
