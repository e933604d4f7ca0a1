#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace keel::tokenizer {

namespace {

// Unicode White_Space, as Oniguruma's \s.
constexpr std::string_view kSpaceClass =
    "\\x{9}-\\x{d}\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{"
    "3000}";
// Unicode Word (Alphabetic, marks, Nd, Pc, Join_Control), as Oniguruma's \w.
constexpr std::string_view kWordClass =
    "\\p{L}\\p{M}\\p{Nd}\\p{Nl}\\p{Pc}\\x{200c}\\x{200d}\\x{24b6}-\\x{24e9}\\x{1f130}-\\x{1f149}\\x{1f150}-"
    "\\x{1f169}"
    "\\x{1f170}-\\x{1f189}";

struct MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

// One match block per thread, big enough for the whole-match pair (captures are never read).
pcre2_match_data* thread_match_data() {
  thread_local std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(pcre2_match_data_create(1, nullptr));
  return data.get();
}

}  // namespace

std::string translate_onig_pattern(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  size_t i = 0;
  while (i < p.size()) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char d = p[i + 1];
      const bool negated = d == 'S' || d == 'W';
      const std::string_view cls = (d == 's' || d == 'S') ? kSpaceClass : kWordClass;
      if (d == 's' || d == 'S' || d == 'w' || d == 'W') {
        if (!in_class) {
          out += negated ? "[^" : "[";
          out += cls;
          out += ']';
        } else if (!negated) {
          out += cls;
        } else {
          out += p.substr(i, 2);  // a negated class inside a class has no PCRE2 spelling; keep PCRE2's own
        }
      } else {
        out += p.substr(i, 2);
      }
      i += 2;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      ++i;
      if (i < p.size() && p[i] == '^') out += p[i++];
      if (i < p.size() && p[i] == ']') out += p[i++];  // a leading ']' is a literal
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // POSIX class [:alpha:]
      const size_t end = p.find(":]", i + 2);
      if (end != std::string_view::npos) {
        out += p.substr(i, end + 2 - i);
        i = end + 2;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out += c;
    ++i;
  }
  return out;
}

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

Regex::Regex(std::string_view pattern, const std::string& what)
    : translated_(translate_onig_pattern(pattern)) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  auto code = std::make_shared<Code>();
  code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated_.data()), translated_.size(),
                             PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &offset, nullptr);
  if (code->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(err, message, sizeof(message));
    throw_error(ErrorCode::invalid_file, "{}: regex does not compile at offset {}: {} (pattern {:?})", what,
                offset, reinterpret_cast<const char*>(message), std::string(pattern));
  }
  code->jit = pcre2_jit_compile(code->code, PCRE2_JIT_COMPLETE) == 0;
  code_ = std::move(code);
}

void Regex::find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const {
  pcre2_match_data* md = thread_match_data();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t start = 0;
  bool have_last = false;
  size_t last_end = 0;
  while (start <= s.size()) {
    const int rc = code_->jit
                       ? pcre2_jit_match(code_->code, subject, s.size(), start, 0, md, nullptr)
                       : pcre2_match(code_->code, subject, s.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      throw_error(ErrorCode::internal, "tokenizer regex {:?}: match failed: {}", translated_,
                  reinterpret_cast<const char*>(message));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t ms = ov[0], me = ov[1];
    if (ms == me && have_last && last_end == me) {
      // An empty match right after the previous match: step one character, as onig's find_iter does.
      if (start >= s.size()) break;
      start += utf8_len(static_cast<uint8_t>(s[start]));
      continue;
    }
    out.emplace_back(ms, me);
    have_last = true;
    last_end = me;
    start = me;
  }
}

}  // namespace keel::tokenizer
