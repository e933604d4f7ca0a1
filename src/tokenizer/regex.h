// A PCRE2 regex (UTF + UCP, JIT where available) that matches as Oniguruma does in the Rust `tokenizers`
// library: \s, \S, \w and \W are rewritten to Oniguruma's Unicode classes before compiling, and find_all
// steps over empty matches the way onig's find_iter does.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keel::tokenizer {

class Regex {
 public:
  // `what` names the pattern's place for errors ("tokenizer.json: pre_tokenizer.pretokenizers[0].pattern").
  // Throws Error(invalid_file) with PCRE2's message and offset when the pattern does not compile.
  Regex(std::string_view pattern, const std::string& what);

  // Byte ranges [start, end) of the successive non-overlapping matches in s (valid UTF-8), left to right.
  void find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const;

  // The pattern as PCRE2 sees it (after the Oniguruma class rewrite).
  const std::string& translated() const { return translated_; }

 private:
  struct Code;
  std::shared_ptr<const Code> code_;
  std::string translated_;
};

// Oniguruma → PCRE2: \s/\S/\w/\W become explicit Unicode classes (PCRE2 10.42's UCP \s also matches U+180E
// and its \w misses combining marks). Exposed for tests.
std::string translate_onig_pattern(std::string_view pattern);

}  // namespace keel::tokenizer
