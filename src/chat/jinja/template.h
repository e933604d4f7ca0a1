// The Jinja engine's entry point: a template parsed once (jinja2's lexer and parser rules, with transformers'
// settings trim_blocks and lstrip_blocks), rendered any number of times, from any thread, with a JSON
// context. Rendering follows jinja2's ImmutableSandboxedEnvironment as transformers sets it up (tojson,
// raise_exception, strftime_now, loopcontrols) and is bounded by RenderOptions::limits: a template cannot
// hang or exhaust the server, and reaches nothing outside its context (no files, no environment, no imports).
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "chat/jinja/interpreter.h"
#include "chat/jinja/lexer.h"
#include "chat/messages.h"

namespace keel::chat::jinja {

namespace ast {
struct Template;
}

class Template {
 public:
  // Throws TemplateError (ErrorCode::invalid_file) for a template jinja2 would not compile.
  explicit Template(std::string_view source, const LexerOptions& options = {});

  // `context` must be a JSON object; its keys become the template's variables. Throws TemplateRaisedError for
  // raise_exception() (what() is the template's message) and TemplateError for anything else jinja2 would
  // raise.
  std::string render(const Json& context, const RenderOptions& options = {}) const;

 private:
  std::shared_ptr<const ast::Template> ast_;
};

}  // namespace keel::chat::jinja
