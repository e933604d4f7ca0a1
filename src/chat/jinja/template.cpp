#include "chat/jinja/template.h"

#include "chat/jinja/ast.h"
#include "chat/jinja/builtins.h"
#include "chat/jinja/errors.h"
#include "chat/jinja/json.h"
#include "chat/jinja/parser.h"

namespace keel::chat::jinja {

Template::Template(std::string_view source, const LexerOptions& options)
    : ast_(std::make_shared<const ast::Template>(parse(source, options))) {}

std::string Template::render(const Json& context, const RenderOptions& options) const {
  if (!context.is_object())
    throw_error(ErrorCode::invalid_argument, "a template's context must be a JSON object");
  RenderBudget budget(options.limits);
  BudgetScope scope(&budget);
  auto globals = std::make_shared<Frame>();
  add_globals(*globals);
  auto frame = std::make_shared<Frame>();
  frame->parent = globals;
  for (const auto& [key, value] : context.items()) frame->vars[key] = from_json(value);
  Interpreter interp(options, budget);
  std::string out = interp.render(*ast_, frame);
  frame->vars.clear();
  return out;
}

}  // namespace keel::chat::jinja
