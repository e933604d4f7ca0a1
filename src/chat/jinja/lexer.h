// Template text -> tokens, exactly as jinja2's lexer cuts it: newlines normalized to "\n" and one trailing
// newline dropped, `{%- -%}`/`{{- -}}`/`{#- -#}` whitespace control, trim_blocks (one newline after a block
// or comment tag), lstrip_blocks (spaces and tabs before a block or comment tag at the start of a line,
// unless `{%+`),
// `{% raw %}`, and Python string-literal escapes.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace keel::chat::jinja {

enum class Tok : uint8_t {
  data,            // template text
  variable_begin,  // {{
  variable_end,    // }}
  block_begin,     // {%
  block_end,       // %}
  name,
  string,
  integer,
  floating,
  op,  // value holds the operator text: "+", "//", "==", "(", ...
  eof,
};

struct Token {
  Tok type = Tok::eof;
  std::string value;  // data, name, decoded string literal, operator text
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
};

struct LexerOptions {
  bool trim_blocks = true;  // transformers' settings
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws TemplateError (TemplateSyntaxError) on unterminated comments/raw blocks, bad characters, bad
// escapes, unbalanced brackets.
std::vector<Token> tokenize(std::string_view source, const LexerOptions& options);

// jinja2 turns "\r\n" and "\r" into "\n" and, unless keep_trailing_newline, drops one trailing newline.
std::string normalize_newlines(std::string_view source, bool keep_trailing_newline);

}  // namespace keel::chat::jinja
