// Tokens -> AST, following jinja2's parser (jinja2/parser.py) rule for rule, so precedence and the odd
// corners agree: `-2**2` is 4, `~` binds tighter than `+`, filters bind tighter than unary minus's operand, a
// test's bare argument (`x is divisibleby 3`), trailing commas, tuples without parentheses.
#pragma once
#include <string_view>

#include "chat/jinja/ast.h"
#include "chat/jinja/lexer.h"

namespace keel::chat::jinja {

// Throws TemplateError (TemplateSyntaxError, or TemplateAssertionError for an unknown filter or test outside
// an `if`) with the line.
ast::Template parse(std::string_view source, const LexerOptions& options);

// jinja2's compile-time errors and each macro's special names (checks.cpp).
void check_template(ast::Template& tmpl);

// Fills in each frame's UndefinedAtStart (scopes.cpp).
void analyze_scopes(ast::Template& tmpl);

// jinja2's built-in filter and test names (plus transformers' tojson).
bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

}  // namespace keel::chat::jinja
