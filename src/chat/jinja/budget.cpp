#include "chat/jinja/budget.h"

#include "chat/jinja/errors.h"

namespace keel::chat::jinja {
namespace {
thread_local RenderBudget* tl_budget = nullptr;
}

RenderBudget* current_budget() {
  return tl_budget;
}

BudgetScope::BudgetScope(RenderBudget* budget) : previous_(tl_budget) {
  tl_budget = budget;
}
BudgetScope::~BudgetScope() {
  tl_budget = previous_;
}

void RenderBudget::charge_steps(int64_t n) {
  steps_ += n;
  if (steps_ > limits_.max_steps) {
    limit_error(
        "the template did more than {} steps of work (loop iterations, calls, items and bytes / 64 built)",
        limits_.max_steps);
  }
}

void RenderBudget::check_string(size_t bytes) {
  if (bytes > limits_.max_output_bytes) {
    limit_error("the template built a string of {} bytes, over the limit of {}", bytes,
                limits_.max_output_bytes);
  }
  charge_steps(static_cast<int64_t>(bytes / 64));
}

void RenderBudget::check_list(size_t items) {
  if (items > limits_.max_list_items) {
    limit_error("the template built a list of {} items, over the limit of {}", items, limits_.max_list_items);
  }
  charge_steps(static_cast<int64_t>(items));
}

}  // namespace keel::chat::jinja
