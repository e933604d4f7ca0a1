#include "tokenizer/added_vocab.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace keel::tokenizer {

void AddedVocabulary::Trie::insert(std::string_view pattern, int32_t token) {
  int32_t node = 0;
  for (char c : pattern) {
    const auto b = static_cast<uint8_t>(c);
    auto& ch = nodes[static_cast<size_t>(node)].children;
    auto it = std::lower_bound(ch.begin(), ch.end(), b, [](const auto& e, uint8_t v) { return e.first < v; });
    if (it != ch.end() && it->first == b) {
      node = it->second;
    } else {
      const auto child = static_cast<int32_t>(nodes.size());
      ch.insert(it, {b, child});
      nodes.emplace_back();
      node = child;
    }
  }
  first_byte[static_cast<uint8_t>(pattern[0])] = true;
  if (nodes[static_cast<size_t>(node)].token < 0)
    nodes[static_cast<size_t>(node)].token = token;  // first one wins
}

std::pair<size_t, int32_t> AddedVocabulary::Trie::longest_at(std::string_view s, size_t pos) const {
  int32_t node = 0;
  std::pair<size_t, int32_t> best{pos, -1};
  for (size_t i = pos; i < s.size(); ++i) {
    const auto& ch = nodes[static_cast<size_t>(node)].children;
    const auto b = static_cast<uint8_t>(s[i]);
    auto it = std::lower_bound(ch.begin(), ch.end(), b, [](const auto& e, uint8_t v) { return e.first < v; });
    if (it == ch.end() || it->first != b) break;
    node = it->second;
    if (nodes[static_cast<size_t>(node)].token >= 0) best = {i + 1, nodes[static_cast<size_t>(node)].token};
  }
  return best;
}

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer& normalizer)
    : tokens_(std::move(tokens)) {
  TokenId max_id = -1;
  for (const auto& t : tokens_) max_id = std::max(max_id, t.id);
  by_id_.assign(static_cast<size_t>(max_id + 1), -1);
  for (size_t k = 0; k < tokens_.size(); ++k) {
    AddedToken& t = tokens_[k];
    t.piece = t.normalized ? normalizer.apply(t.content) : t.content;
    by_id_[static_cast<size_t>(tokens_[k].id)] = static_cast<int32_t>(k);
    by_content_.insert_or_assign(tokens_[k].content, static_cast<TokenId>(k));
  }
  // The Rust library builds its matchers from the special tokens first, then the others.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t k = 0; k < tokens_.size(); ++k) {
      const AddedToken& t = tokens_[k];
      if (t.special != (pass == 0) || t.content.empty()) continue;
      if (!t.normalized)
        raw_.insert(t.content, static_cast<int32_t>(k));
      else if (!t.piece.empty())
        normalized_.insert(t.piece, static_cast<int32_t>(k));
    }
  }
}

const AddedToken* AddedVocabulary::find(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= by_id_.size() || by_id_[static_cast<size_t>(id)] < 0)
    return nullptr;
  return &tokens_[static_cast<size_t>(by_id_[static_cast<size_t>(id)])];
}

const AddedToken* AddedVocabulary::find(std::string_view content) const {
  auto it = by_content_.find(content);
  return it == by_content_.end() ? nullptr : &tokens_[static_cast<size_t>(it->second)];
}

namespace {

char32_t last_char_before(std::string_view s, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
  return next_codepoint(s, start);
}

// Whether [begin, end) meets any of the ascending disjoint `ranges`.
bool overlaps(std::span<const std::pair<size_t, size_t>> ranges, size_t begin, size_t end) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), begin,
                             [](size_t b, const std::pair<size_t, size_t>& r) { return b < r.second; });
  return it != ranges.end() && it->first < end;
}

}  // namespace

std::vector<Segment> AddedVocabulary::split(std::string_view s, bool normalized, bool allow_special,
                                            std::span<const std::pair<size_t, size_t>> literal) const {
  const Trie& trie = normalized ? normalized_ : raw_;
  std::vector<Segment> out;
  if (s.empty()) return out;
  if (trie.empty()) {
    out.push_back({0, s.size(), -1});
    return out;
  }
  size_t start_offset = 0;  // end of the last emitted segment
  size_t pos = 0;           // where the matcher resumes
  while (pos < s.size()) {
    if (!trie.first_byte[static_cast<uint8_t>(s[pos])]) {
      ++pos;
      continue;
    }
    const auto [match_end, index] = trie.longest_at(s, pos);
    if (index < 0) {
      ++pos;
      continue;
    }
    const size_t match_start = pos;
    pos = match_end;
    const AddedToken& t = tokens_[static_cast<size_t>(index)];
    if (!allow_special && t.special) continue;
    if (t.special && overlaps(literal, match_start, match_end)) continue;
    if (match_start < start_offset) continue;  // inside a previous token's rstrip (never happens in HF files)
    if (t.single_word) {
      const bool start_ok = match_start == 0 || !is_word_char(last_char_before(s, match_start));
      size_t i = match_end;
      const bool stop_ok = match_end == s.size() || !is_word_char(next_codepoint(s, i));
      if (!start_ok || !stop_ok) continue;
    }
    size_t start = match_start, stop = match_end;
    if (t.lstrip) {
      while (start > start_offset && is_whitespace(last_char_before(s, start))) {
        size_t k = start - 1;
        while (k > 0 && (static_cast<uint8_t>(s[k]) & 0xC0) == 0x80) --k;
        start = k;
      }
      start = std::max(start, start_offset);
    }
    if (t.rstrip) {
      size_t i = stop;
      while (i < s.size()) {
        size_t next = i;
        if (!is_whitespace(next_codepoint(s, next))) break;
        i = next;
      }
      stop = i;
    }
    if (start_offset < start) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, t.id});
    start_offset = stop;
  }
  if (start_offset < s.size()) out.push_back({start_offset, s.size(), -1});
  return out;
}

}  // namespace keel::tokenizer
