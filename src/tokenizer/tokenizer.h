// A Hugging Face tokenizer.json (+ tokenizer_config.json) read into keel: BPE (byte-level and
// SentencePiece-style with byte fallback), its normalizer / pre-tokenizer / decoder / post-processor, and
// added tokens.
//
// Added tokens and the `allow_special` flag mirror the Rust `tokenizers` library exactly:
//  - allow_special=true is the library's default (encode_special_tokens=false): every added token in the text
//    becomes its id. Use it for text keel rendered itself (a chat template's output).
//  - allow_special=false is the library's encode_special_tokens=true (transformers'
//  split_special_tokens=True):
//    tokens marked "special": true are not matched and go through the model as ordinary text; added tokens
//    with "special": false (Qwen3's <think>, </think>, <tool_call>...) are STILL matched, as Hugging Face
//    does. Use it for raw user text so "<|im_start|>" typed by a user cannot forge a turn.
// encode() and decode() are const and thread-safe.
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_vocab.h"
#include "tokenizer/bpe.h"

namespace keel::tokenizer {

struct EncodeOptions {
  bool allow_special = false;       // match special added tokens in the text (see above)
  bool add_special_tokens = false;  // apply the post-processor (e.g. prepend <s>), as HF's add_special_tokens
  // With allow_special: byte ranges [begin, end) of the text (ascending, disjoint) that are literal text from
  // a user, inside which no special token matches (as if allow_special were false for a match overlapping
  // one). A chat prompt keeps its template's special tokens while a user's "<|im_end|>" stays text
  // (chat::SpecialTextShield). Tokens with normalized=true are matched on the normalized text, whose
  // offsets differ: a text segment overlapping a literal range gets none of those special tokens.
  std::span<const std::pair<size_t, size_t>> literal = {};
};

class Tokenizer {
 public:
  // dir/tokenizer.json, and dir/tokenizer_config.json when present (bos/eos names). Throws
  // Error(invalid_file) naming the file and field for a malformed file, Error(unsupported) for a valid one
  // keel cannot run.
  static Tokenizer load(const std::string& dir);
  // The same from file contents; `name` is used in error messages.
  static Tokenizer from_json(std::string_view tokenizer_json, std::string_view config_json = {},
                             const std::string& name = "tokenizer.json");
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // text must be valid UTF-8 (Error(invalid_argument) naming the byte offset otherwise).
  std::vector<TokenId> encode(std::string_view text, EncodeOptions options = {}) const;
  // Ids the vocabulary does not have are skipped, as Hugging Face does. skip_special drops tokens marked
  // special.
  std::string decode(std::span<const TokenId> ids, bool skip_special = false) const;

  // The token string decode() hands its decoder for this id, or nullopt when decode() drops the id (unknown,
  // or special while skip_special).
  const std::string* decode_piece(TokenId id, bool skip_special) const;

  std::optional<TokenId> token_to_id(std::string_view token) const;  // added tokens first, then the model
  std::optional<std::string> id_to_token(TokenId id) const;  // the piece as stored (e.g. "Ġthe", "▁a")
  TokenId vocab_size() const;                                // largest id + 1 over the model and added tokens
  bool is_special(TokenId id) const;
  const std::vector<AddedToken>& added_tokens() const;

  // From tokenizer_config.json ("bos_token" etc., a string or {"content": ...}); nullopt when absent or null.
  std::optional<TokenId> bos_id() const;
  std::optional<TokenId> eos_id() const;
  std::optional<TokenId> pad_id() const;

  // Empties the BPE model's cache of encoded words (benchmarks of the uncached path).
  void clear_cache() const;

  // True when the decoder merges runs of <0xXX> tokens (the stream decoder holds them back).
  bool decoder_has_byte_fallback() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace keel::tokenizer
