// What a Split pre-tokenizer, a Replace normalizer or a Replace decoder looks for: a literal string or a
// regex (tokenizer.json `{"String": ...}` / `{"Regex": ...}`), and the Hugging Face split behaviours built on
// it.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex.h"

namespace keel::tokenizer {

// A byte range of a string and whether the pattern matched it. A list of these covers the string in order.
struct Span {
  size_t start;
  size_t end;
  bool is_match;
};

class Pattern {
 public:
  // j is {"String": s} or {"Regex": r}; `what` names it for errors.
  static Pattern from_json(const nlohmann::json& j, const std::string& what);
  static Pattern literal(std::string s);

  // Spans covering s: matches and the gaps between them ([{0,0,false}] for an empty s).
  std::vector<Span> find_matches(std::string_view s) const;

 private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;
};

// Spans covering a string of `length` bytes given its successive non-overlapping matches.
std::vector<Span> spans_from_matches(size_t length, const std::vector<std::pair<size_t, size_t>>& matches);

// Each character for which pred holds is one match (Rust's `impl Pattern for Fn(char) -> bool`).
std::vector<Span> find_char_matches(std::string_view s, const std::function<bool(char32_t)>& pred);

enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };
SplitBehavior split_behavior_from_json(const nlohmann::json& j, const std::string& what);

// NormalizedString::split: the non-empty pieces [start, end) of s given the spans and the behaviour; `invert`
// flips which spans count as matches.
std::vector<std::pair<size_t, size_t>> split_spans(std::vector<Span> spans, SplitBehavior behavior,
                                                   bool invert);

}  // namespace keel::tokenizer
