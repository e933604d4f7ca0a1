// Small text helpers for finding markers in a stream whose end may cut a marker in two.
#pragma once
#include <algorithm>
#include <span>
#include <string_view>

namespace keel::chat::markers {

constexpr size_t npos = std::string_view::npos;

inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

inline size_t first_non_space(std::string_view text, size_t from = 0) {
  for (size_t i = from; i < text.size(); ++i) {
    if (!is_space(text[i])) return i;
  }
  return npos;
}

// Bytes of whitespace at the end of `text`.
inline size_t trailing_space(std::string_view text) {
  size_t n = 0;
  while (n < text.size() && is_space(text[text.size() - 1 - n])) ++n;
  return n;
}

enum class Match { none, partial, full };

// Whether text[pos...] starts with `marker` (full), is a proper prefix of it that the end of `text` cut
// (partial), or neither.
inline Match match_at(std::string_view text, size_t pos, std::string_view marker) {
  std::string_view rest = text.substr(std::min(pos, text.size()));
  if (rest.starts_with(marker)) return Match::full;
  if (marker.starts_with(rest)) return Match::partial;
  return Match::none;
}

// The best match among `markers` at text[pos...]: a full match wins over a partial one.
inline Match match_any_at(std::string_view text, size_t pos, std::span<const std::string_view> markers,
                          std::string_view* which = nullptr) {
  Match best = Match::none;
  for (std::string_view m : markers) {
    Match r = match_at(text, pos, m);
    if (r == Match::full) {
      if (which) *which = m;
      return r;
    }
    if (r == Match::partial) best = Match::partial;
  }
  return best;
}

struct Found {
  size_t pos = npos;
  std::string_view marker;
};

// The earliest full occurrence of any of `markers` in text[from...].
inline Found find_first(std::string_view text, std::span<const std::string_view> markers, size_t from = 0) {
  Found found;
  for (std::string_view m : markers) {
    size_t p = text.find(m, from);
    if (p < found.pos) found = {p, m};
  }
  return found;
}

// Length of the longest suffix of `text` that is a proper prefix of one of `markers`: the bytes that must be
// held back because the next delta may complete a marker.
inline size_t partial_marker_suffix(std::string_view text, std::span<const std::string_view> markers) {
  size_t best = 0;
  for (std::string_view m : markers) {
    for (size_t k = std::min(m.size() - 1, text.size()); k > best; --k) {
      if (text.ends_with(m.substr(0, k))) {
        best = k;
        break;
      }
    }
  }
  return best;
}

}  // namespace keel::chat::markers
