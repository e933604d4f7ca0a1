// Detokenizes a stream of generated ids into text deltas. A delta never ends inside a UTF-8 character: text
// is held back while the decoded window ends in U+FFFD (an incomplete byte sequence) or, for decoders that
// merge <0xXX> byte tokens, while the last token is one. The decode runs over a short window that starts at
// the previous delta's tokens, so SentencePiece's leading-space strip and Metaspace's first-token rule apply
// as in a full decode (Hugging Face's DecodeStream algorithm). flush() returns what is still held at the end
// of the stream. Concatenating every step() and the final flush() gives decode(all ids).
#pragma once
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace keel::tokenizer {

class StreamDecoder {
 public:
  // The tokenizer must outlive the stream decoder.
  StreamDecoder(const Tokenizer& tokenizer, bool skip_special);

  std::string step(TokenId id);  // the new text this id completes, possibly empty
  std::string flush();           // the held-back rest; the decoder is then empty again

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_;
  bool byte_fallback_;
  bool last_is_byte_token_ = false;  // the last id decode() keeps is a <0xXX> token
  std::vector<TokenId> ids_;         // the window: tokens of the last delta, then tokens not yet emitted
  std::string prefix_;               // decode(ids_[0, prefix_index_))
  size_t prefix_index_ = 0;
};

}  // namespace keel::tokenizer
