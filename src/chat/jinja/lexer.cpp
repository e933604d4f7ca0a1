#include "chat/jinja/lexer.h"

#include <cctype>

#include "chat/jinja/errors.h"
#include "chat/jinja/pystr.h"

namespace keel::chat::jinja {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

class Lexer {
 public:
  Lexer(std::string source, const LexerOptions& options) : s_(std::move(source)), opt_(options) {}

  std::vector<Token> run() {
    while (pos_ < s_.size()) lex_root();
    push(Tok::eof, "");
    return std::move(tokens_);
  }

 private:
  // Python's `\s` at pos (a whole code point), or 0.
  size_t space_at(size_t pos) const {
    if (pos >= s_.size()) return 0;
    auto b = static_cast<unsigned char>(s_[pos]);
    if (b < 0x80) return pystr::is_space(b) ? 1 : 0;
    size_t n = (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 1;
    if (n == 1 || pos + n > s_.size()) return 0;
    auto cps = pystr::decode(std::string_view(s_).substr(pos, n));
    return cps.size() == 1 && pystr::is_space(cps[0]) ? n : 0;
  }
  size_t skip_spaces(size_t pos) const {
    while (size_t n = space_at(pos)) pos += n;
    return pos;
  }
  bool at(size_t pos, std::string_view what) const { return s_.compare(pos, what.size(), what) == 0; }

  void push(Tok type, std::string value) {
    Token t;
    t.type = type;
    t.value = std::move(value);
    t.line = line_;
    tokens_.push_back(std::move(t));
  }
  void advance_to(size_t pos) {
    for (size_t i = pos_; i < pos && i < s_.size(); ++i) line_ += s_[i] == '\n';
    pos_ = pos;
  }

  // The text before a tag, with jinja2's OptionalLStrip rules: `-` strips all whitespace before the tag;
  // otherwise, with lstrip_blocks and a block or comment tag (not `{{`, not `{%+`), spaces and tabs between
  // the last newline (or the start of a line) and the tag go.
  void emit_text_before_tag(std::string text, char sign, bool is_variable) {
    if (sign == '-') {
      text = pystr::strip(text, std::nullopt, false, true);
    } else if (sign != '+' && opt_.lstrip_blocks && !is_variable) {
      size_t nl = text.rfind('\n');
      size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting_) && l_pos < text.size() &&
          skip_spaces_in(text, l_pos) == text.size()) {
        text.resize(l_pos);
      }
    }
    if (!text.empty()) push(Tok::data, std::move(text));
  }
  static size_t skip_spaces_in(const std::string& text, size_t pos) {
    auto rest = pystr::decode(std::string_view(text).substr(pos));
    size_t bytes = pos;
    for (uint32_t cp : rest) {
      if (!pystr::is_space(cp)) return bytes;
      std::string enc;
      pystr::append_utf8(enc, cp);
      bytes += enc.size();
    }
    return bytes;
  }

  // `{%` or `{%-`/`{%+` ... `-%}`/`%}` of a raw tag at pos: returns the end of the match, or 0.
  size_t match_raw_begin(size_t pos) const {
    size_t p = pos + 2;
    if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) ++p;
    p = skip_spaces(p);
    if (!at(p, "raw")) return 0;
    p = skip_spaces(p + 3);
    if (at(p, "-%}")) return skip_spaces(p + 3);
    if (at(p, "%}")) return p + 2;
    return 0;
  }

  void lex_root() {
    size_t tag = pos_;
    while (true) {
      tag = s_.find('{', tag);
      if (tag == std::string::npos || tag + 1 >= s_.size()) {
        push(Tok::data, s_.substr(pos_));  // the rest is text
        advance_to(s_.size());
        return;
      }
      char c = s_[tag + 1];
      if (c == '{' || c == '%' || c == '#') break;
      ++tag;
    }
    char kind = s_[tag + 1];
    char sign = tag + 2 < s_.size() && (s_[tag + 2] == '-' || s_[tag + 2] == '+') ? s_[tag + 2] : 0;
    std::string text = s_.substr(pos_, tag - pos_);
    if (kind == '%') {
      if (size_t raw_end = match_raw_begin(tag)) {
        emit_text_before_tag(std::move(text), sign, false);
        advance_to(raw_end);
        line_starting_ = s_[raw_end - 1] == '\n';
        lex_raw_body();
        return;
      }
    }
    emit_text_before_tag(std::move(text), sign, kind == '{');
    advance_to(tag + 2 + (sign ? 1 : 0));
    if (kind == '#') {
      lex_comment();
    } else {
      lex_tag(kind == '%');
    }
  }

  void lex_comment() {
    for (size_t p = pos_; p + 1 < s_.size(); ++p) {
      size_t end = 0;
      if ((s_[p] == '+') && at(p + 1, "#}")) {
        end = p + 3;
      } else if (s_[p] == '-' && at(p + 1, "#}")) {
        end = skip_spaces(p + 3);
      } else if (at(p, "#}")) {
        end = p + 2;
        if (opt_.trim_blocks && end < s_.size() && s_[end] == '\n') ++end;
      }
      if (end) {
        advance_to(end);
        line_starting_ = s_[end - 1] == '\n';
        return;
      }
    }
    syntax_error(line_, "Missing end of comment tag");
  }

  void lex_raw_body() {
    for (size_t p = s_.find("{%", pos_); p != std::string::npos; p = s_.find("{%", p + 1)) {
      size_t q = p + 2;
      char sign = q < s_.size() && (s_[q] == '-' || s_[q] == '+') ? s_[q] : 0;
      if (sign) ++q;
      q = skip_spaces(q);
      if (!at(q, "endraw")) continue;
      q = skip_spaces(q + 6);
      size_t end = 0;
      if (at(q, "+%}")) {
        end = q + 3;
      } else if (at(q, "-%}")) {
        end = skip_spaces(q + 3);
      } else if (at(q, "%}")) {
        end = q + 2;
        if (opt_.trim_blocks && end < s_.size() && s_[end] == '\n') ++end;
      } else {
        continue;
      }
      emit_text_before_tag(s_.substr(pos_, p - pos_), sign, false);
      advance_to(end);
      line_starting_ = s_[end - 1] == '\n';
      return;
    }
    syntax_error(line_, "Missing end of raw directive");
  }

  // The end of a `%}` / `}}` at pos (with its whitespace control), or 0.
  size_t match_tag_end(size_t pos, bool block) const {
    if (block) {
      if (at(pos, "+%}")) return pos + 3;
      if (at(pos, "-%}")) return skip_spaces(pos + 3);
      if (at(pos, "%}")) {
        size_t end = pos + 2;
        if (opt_.trim_blocks && end < s_.size() && s_[end] == '\n') ++end;
        return end;
      }
      return 0;
    }
    if (at(pos, "-}}")) return skip_spaces(pos + 3);
    if (at(pos, "}}")) return pos + 2;
    return 0;
  }

  void lex_tag(bool block) {
    push(block ? Tok::block_begin : Tok::variable_begin, "");
    std::string balance;  // the closing brackets still expected
    while (pos_ < s_.size()) {
      if (balance.empty()) {
        if (size_t end = match_tag_end(pos_, block)) {
          push(block ? Tok::block_end : Tok::variable_end, "");
          advance_to(end);
          line_starting_ = s_[end - 1] == '\n';
          return;
        }
      }
      if (size_t n = space_at(pos_)) {
        advance_to(skip_spaces(pos_ + n));
        continue;
      }
      if (lex_number() || lex_name() || lex_string()) continue;
      lex_operator(balance);
    }
    // End of input inside a tag: the parser reports what it expected.
  }

  // jinja2's float_re then integer_re (both allow `_` between digits).
  bool lex_number() {
    if (!is_digit(s_[pos_])) return false;
    auto digits = [&](size_t p) {  // (\d+_)*\d+ from p; returns its end, or p when absent
      if (p >= s_.size() || !is_digit(s_[p])) return p;
      while (p < s_.size() && is_digit(s_[p])) {
        ++p;
        if (p + 1 < s_.size() && s_[p] == '_' && is_digit(s_[p + 1])) ++p;
      }
      return p;
    };
    if (pos_ == 0 || s_[pos_ - 1] != '.') {
      size_t mant = digits(pos_);
      size_t p = mant;
      bool fraction = false;
      if (p < s_.size() && s_[p] == '.' && digits(p + 1) > p + 1) {
        p = digits(p + 1);
        fraction = true;
      }
      size_t end = 0;
      if (p < s_.size() && (s_[p] == 'e' || s_[p] == 'E')) {
        size_t q = p + 1;
        if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
        if (digits(q) > q) end = digits(q);
      }
      if (!end && fraction) end = p;
      if (end) {
        std::string text;
        for (size_t i = pos_; i < end; ++i) {
          if (s_[i] != '_') text += s_[i];
        }
        auto value = pystr::parse_float(text);
        push(Tok::floating, text);
        tokens_.back().float_value = value.value_or(0.0);
        advance_to(end);
        return true;
      }
    }
    // Integers: 0b.., 0o.., 0x.., [1-9](_?\d)*, 0(_?0)*
    size_t p = pos_;
    int base = 10;
    auto radix_digits = [&](size_t q, int radix) {
      size_t start = q;
      while (q < s_.size()) {
        size_t r = q + (s_[q] == '_' ? 1 : 0);
        if (r >= s_.size()) break;
        char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s_[r])));
        int d = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : 99;
        if (d >= radix) break;
        q = r + 1;
      }
      return q > start ? q : 0;
    };
    size_t end = 0;
    if (s_[p] == '0' && p + 1 < s_.size()) {
      char x = static_cast<char>(std::tolower(static_cast<unsigned char>(s_[p + 1])));
      base = x == 'b' ? 2 : x == 'o' ? 8 : x == 'x' ? 16 : 10;
      if (base != 10) end = radix_digits(p + 2, base);
      if (!end) base = 10;
    }
    if (!end) {
      if (s_[p] == '0') {
        end = p + 1;
        while (end < s_.size() &&
               (s_[end] == '0' || (s_[end] == '_' && end + 1 < s_.size() && s_[end + 1] == '0'))) {
          end += s_[end] == '_' ? 2 : 1;
        }
      } else {
        end = radix_digits(p, 10);
      }
    }
    std::string text;
    for (size_t i = base == 10 ? p : p + 2; i < end; ++i) {
      if (s_[i] != '_') text += s_[i];
    }
    auto value = pystr::parse_int(text, base);
    if (!value) syntax_error(line_, "integer literal {} does not fit in 64 bits", s_.substr(p, end - p));
    push(Tok::integer, s_.substr(p, end - p));
    tokens_.back().int_value = *value;
    advance_to(end);
    return true;
  }

  bool lex_name() {
    if (!is_name_start(s_[pos_])) return false;
    size_t end = pos_;
    while (end < s_.size() && is_name_char(s_[end])) ++end;
    push(Tok::name, s_.substr(pos_, end - pos_));
    advance_to(end);
    return true;
  }

  bool lex_string() {
    char quote = s_[pos_];
    if (quote != '\'' && quote != '"') return false;
    size_t p = pos_ + 1;
    while (p < s_.size() && s_[p] != quote) p += s_[p] == '\\' ? 2 : 1;
    if (p >= s_.size())
      syntax_error(line_, "unexpected char {} at {}", pystr::repr(std::string(1, quote)), pos_);
    push(Tok::string, decode_escapes(std::string_view(s_).substr(pos_ + 1, p - pos_ - 1)));
    advance_to(p + 1);
    return true;
  }

  // jinja2 decodes a literal with `.encode("ascii", "backslashreplace").decode("unicode-escape")`.
  std::string decode_escapes(std::string_view raw) const {
    if (raw.find('\\') == std::string_view::npos) return std::string(raw);
    std::string ascii;  // step 1: non-ASCII code points become \xhh, \uhhhh, \Uhhhhhhhh
    for (uint32_t cp : pystr::decode(raw)) {
      if (cp < 0x80)
        ascii += static_cast<char>(cp);
      else if (cp <= 0xFF)
        ascii += fmt::format("\\x{:02x}", cp);
      else if (cp <= 0xFFFF)
        ascii += fmt::format("\\u{:04x}", cp);
      else
        ascii += fmt::format("\\U{:08x}", cp);
    }
    std::string out;  // step 2: Python's unicode-escape codec
    auto hex_escape = [&](size_t& i, int n, const char* what) {
      uint32_t v = 0;
      for (int k = 0; k < n; ++k) {
        if (i + 1 >= ascii.size() || !std::isxdigit(static_cast<unsigned char>(ascii[i + 1]))) {
          syntax_error(line_, "truncated {} escape", what);
        }
        char c = static_cast<char>(std::tolower(static_cast<unsigned char>(ascii[++i])));
        v = v * 16 + static_cast<uint32_t>(is_digit(c) ? c - '0' : c - 'a' + 10);
      }
      if (v > 0x10FFFF) syntax_error(line_, "illegal Unicode character");
      pystr::append_utf8(out, v);
    };
    for (size_t i = 0; i < ascii.size(); ++i) {
      char c = ascii[i];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i + 1 >= ascii.size()) syntax_error(line_, "\\ at end of string");
      char e = ascii[++i];
      switch (e) {
        case '\n':
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x':
          hex_escape(i, 2, "\\xXX");
          break;
        case 'u':
          hex_escape(i, 4, "\\uXXXX");
          break;
        case 'U':
          hex_escape(i, 8, "\\UXXXXXXXX");
          break;
        case 'N':
          unsupported_error("\\N{{...}} escapes in string literals are not supported (line {})", line_);
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && i + 1 < ascii.size() && ascii[i + 1] >= '0' && ascii[i + 1] <= '7';
                 ++k) {
              v = v * 8 + static_cast<uint32_t>(ascii[++i] - '0');
            }
            pystr::append_utf8(out, v);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    return out;
  }

  void lex_operator(std::string& balance) {
    static const char* const kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : kTwo) {
      if (at(pos_, op)) {
        push(Tok::op, op);
        advance_to(pos_ + 2);
        return;
      }
    }
    char c = s_[pos_];
    static const std::string_view kOne = "+-/*%~[](){}><=.:|,;";
    if (kOne.find(c) == std::string_view::npos) {
      syntax_error(line_, "unexpected char {} at {}", pystr::repr(s_.substr(pos_, 1)), pos_);
    }
    if (c == '{') balance += '}';
    if (c == '(') balance += ')';
    if (c == '[') balance += ']';
    if (c == '}' || c == ')' || c == ']') {
      if (balance.empty()) syntax_error(line_, "unexpected '{}'", c);
      if (balance.back() != c) syntax_error(line_, "unexpected '{}', expected '{}'", c, balance.back());
      balance.pop_back();
    }
    push(Tok::op, std::string(1, c));
    advance_to(pos_ + 1);
  }

  std::string s_;
  LexerOptions opt_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::string normalize_newlines(std::string_view source, bool keep_trailing_newline) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::vector<Token> tokenize(std::string_view source, const LexerOptions& options) {
  return Lexer(normalize_newlines(source, options.keep_trailing_newline), options).run();
}

}  // namespace keel::chat::jinja
