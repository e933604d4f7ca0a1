// The tokenizer.json "model" of type BPE: vocab, ranked merges, unk / byte_fallback / fuse_unk,
// continuing_subword_prefix, end_of_word_suffix, ignore_merges. Merges are applied by rank with a min-heap
// over a linked list of symbols (the Rust library's algorithm, so ties break the same way); results for
// pieces shorter than kCacheMaxBytes are cached.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/json_fields.h"

namespace keel::tokenizer {

using TokenId = int32_t;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using Vocab = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  static constexpr size_t kCacheMaxBytes = 256;  // pieces this long or longer are not cached
  static constexpr size_t kCacheCapacity = 1 << 16;

  // `model` is tokenizer.json's "model" object; `where` names it for errors.
  static BpeModel from_json(const json& model, const std::string& where);
  BpeModel();  // an empty vocabulary
  BpeModel(BpeModel&&) noexcept;
  BpeModel& operator=(BpeModel&&) noexcept;
  ~BpeModel();

  // Appends the ids of one pre-tokenized piece. Thread-safe.
  void encode(std::string_view piece, std::vector<TokenId>& out) const;

  void clear_cache() const;  // for benchmarks of the uncached path

  std::optional<TokenId> token_to_id(std::string_view token) const;
  const std::string* id_to_token(TokenId id) const;  // nullptr for ids the vocab does not have
  TokenId vocab_size() const { return static_cast<TokenId>(id_to_token_.size()); }  // largest id + 1

 private:
  struct Merge {
    uint32_t rank;
    TokenId new_id;
  };
  struct Cache;
  static uint64_t pair_key(TokenId a, TokenId b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  void merge_piece(std::string_view piece, std::vector<TokenId>& out) const;
  TokenId char_id(std::string_view ch, char32_t cp, bool first, bool last, std::string& scratch) const;

  Vocab vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<uint8_t> has_id_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::vector<TokenId> bmp_char_ids_;  // code point < 0x10000 → id of that one-character token, or -1
  TokenId byte_ids_[256];              // <0xXX> tokens for byte_fallback, -1 where absent
  std::optional<TokenId> unk_id_;
  std::string prefix_, suffix_;  // continuing_subword_prefix, end_of_word_suffix
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  std::unique_ptr<Cache> cache_;
};

}  // namespace keel::tokenizer
