// tokenizer.json "added_tokens": tokens matched in the raw text before the model sees it. Matching follows
// the Rust library: leftmost-longest over all tokens of one kind (normalized=false tokens against the raw
// text, normalized=true tokens against the normalized text), then single_word / lstrip / rstrip. A match that
// is rejected (single_word, or a special token when specials are not allowed) still consumes its span.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/normalizer.h"

namespace keel::tokenizer {

struct AddedToken {
  TokenId id;
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = false, special = false;
  // What id → token and decode give: the content, passed through the normalizer when normalized=true
  // (tokenizers 0.23 decodes such a token to its normalized form). Filled in by AddedVocabulary.
  std::string piece;
};

// A stretch [start, end) of the text, and the added token it is (-1 for ordinary text).
struct Segment {
  size_t start, end;
  TokenId id;
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  // `normalizer` is applied to the content of normalized=true tokens before they are matched.
  AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer& normalizer);

  // Segments covering s in order (empty for an empty s). `normalized` picks which tokens are looked for;
  // allow_special=false skips tokens with special=true (HF's encode_special_tokens=true).
  // `literal`: ascending disjoint byte ranges of s where no special token may match (one that overlaps a
  // range is rejected as with allow_special=false).
  std::vector<Segment> split(std::string_view s, bool normalized, bool allow_special,
                             std::span<const std::pair<size_t, size_t>> literal = {}) const;

  const AddedToken* find(TokenId id) const;
  const AddedToken* find(std::string_view content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // sorted by byte
    int32_t token = -1;                                 // index into tokens_ of the pattern ending here
  };
  struct Trie {
    std::vector<Node> nodes{Node{}};
    bool first_byte[256] = {};
    bool empty() const { return nodes.size() == 1; }
    void insert(std::string_view pattern, int32_t token);
    // Longest pattern starting at s[pos]: its end and token index, or token -1.
    std::pair<size_t, int32_t> longest_at(std::string_view s, size_t pos) const;
  };
  std::vector<AddedToken> tokens_;
  std::vector<int32_t> by_id_;  // id → index into tokens_, -1 where none
  Vocab by_content_;            // content → index into tokens_
  Trie raw_, normalized_;
};

}  // namespace keel::tokenizer
