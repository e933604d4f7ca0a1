#include "tokenizer/pattern.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/unicode.h"

namespace keel::tokenizer {

Pattern Pattern::from_json(const nlohmann::json& j, const std::string& what) {
  Pattern p;
  if (j.is_object() && j.size() == 1 && j.contains("String") && j["String"].is_string()) {
    p.literal_ = j["String"].get<std::string>();
  } else if (j.is_object() && j.size() == 1 && j.contains("Regex") && j["Regex"].is_string()) {
    p.regex_ = std::make_shared<Regex>(j["Regex"].get<std::string>(), what);
  } else {
    throw_error(ErrorCode::invalid_file, "{}: expected {{\"String\": ...}} or {{\"Regex\": ...}}, got {}",
                what, json_preview(j));
  }
  return p;
}

Pattern Pattern::literal(std::string s) {
  Pattern p;
  p.literal_ = std::move(s);
  return p;
}

std::vector<Span> spans_from_matches(size_t length, const std::vector<std::pair<size_t, size_t>>& m) {
  std::vector<Span> spans;
  if (length == 0) return {{0, 0, false}};
  spans.reserve(m.size() * 2 + 1);
  size_t prev = 0;
  for (const auto& [start, end] : m) {
    if (prev != start) spans.push_back({prev, start, false});
    spans.push_back({start, end, true});
    prev = end;
  }
  if (prev != length) spans.push_back({prev, length, false});
  return spans;
}

std::vector<Span> Pattern::find_matches(std::string_view s) const {
  std::vector<std::pair<size_t, size_t>> m;
  if (regex_) {
    if (!s.empty()) regex_->find_all(s, m);
  } else if (!literal_.empty()) {
    size_t pos = 0;
    while ((pos = s.find(literal_, pos)) != std::string_view::npos) {
      m.emplace_back(pos, pos + literal_.size());
      pos += literal_.size();
    }
  } else {
    return {{0, s.size(), false}};
  }
  return spans_from_matches(s.size(), m);
}

std::vector<Span> find_char_matches(std::string_view s, const std::function<bool(char32_t)>& pred) {
  if (s.empty()) return {{0, 0, false}};
  std::vector<Span> spans;
  size_t last = 0, i = 0;
  while (i < s.size()) {
    const size_t start = i;
    const char32_t cp = next_codepoint(s, i);
    if (pred(cp)) {
      if (last < start) spans.push_back({last, start, false});
      spans.push_back({start, i, true});
      last = i;
    }
  }
  if (last < s.size()) spans.push_back({last, s.size(), false});
  return spans;
}

SplitBehavior split_behavior_from_json(const nlohmann::json& j, const std::string& what) {
  const std::string b = j.is_string() ? j.get<std::string>() : std::string();
  if (b == "Removed") return SplitBehavior::removed;
  if (b == "Isolated") return SplitBehavior::isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
  if (b == "MergedWithNext") return SplitBehavior::merged_with_next;
  if (b == "Contiguous") return SplitBehavior::contiguous;
  throw_error(
      ErrorCode::invalid_file,
      "{}: unknown split behavior {} (expected Removed, Isolated, MergedWithPrevious, MergedWithNext or "
      "Contiguous)",
      what, json_preview(j));
}

std::vector<std::pair<size_t, size_t>> split_spans(std::vector<Span> spans, SplitBehavior behavior,
                                                   bool invert) {
  if (invert)
    for (auto& sp : spans) sp.is_match = !sp.is_match;
  // (range, remove) pairs, as the Rust NormalizedString::split builds them.
  struct Piece {
    size_t start, end;
    bool remove;
  };
  std::vector<Piece> pieces;
  pieces.reserve(spans.size());
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::isolated:
      for (const auto& sp : spans) pieces.push_back({sp.start, sp.end, false});
      break;
    case SplitBehavior::removed:
      for (const auto& sp : spans) pieces.push_back({sp.start, sp.end, sp.is_match});
      break;
    case SplitBehavior::contiguous:
      for (const auto& sp : spans) {
        if (sp.is_match == previous_match && !pieces.empty())
          pieces.back().end = sp.end;
        else
          pieces.push_back({sp.start, sp.end, false});
        previous_match = sp.is_match;
      }
      break;
    case SplitBehavior::merged_with_previous:
      for (const auto& sp : spans) {
        if (sp.is_match && !previous_match && !pieces.empty())
          pieces.back().end = sp.end;
        else
          pieces.push_back({sp.start, sp.end, false});
        previous_match = sp.is_match;
      }
      break;
    case SplitBehavior::merged_with_next:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !pieces.empty())
          pieces.back().start = it->start;
        else
          pieces.push_back({it->start, it->end, false});
        previous_match = it->is_match;
      }
      std::reverse(pieces.begin(), pieces.end());
      break;
  }
  std::vector<std::pair<size_t, size_t>> out;
  out.reserve(pieces.size());
  for (const auto& p : pieces)
    if (!p.remove && p.end > p.start) out.emplace_back(p.start, p.end);
  return out;
}

}  // namespace keel::tokenizer
