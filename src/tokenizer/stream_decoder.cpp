#include "tokenizer/stream_decoder.h"

namespace keel::tokenizer {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(&tokenizer),
      skip_special_(skip_special),
      byte_fallback_(tokenizer.decoder_has_byte_fallback()) {}

static bool ends_with_replacement(const std::string& s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

std::string StreamDecoder::step(TokenId id) {
  ids_.push_back(id);
  if (byte_fallback_) {
    // Ids decode() drops leave the run of byte tokens open: the ones around them are decoded together.
    if (const std::string* token = tokenizer_->decode_piece(id, skip_special_))
      last_is_byte_token_ = token->size() == 6 && token->compare(0, 3, "<0x") == 0 && (*token)[5] == '>';
    if (last_is_byte_token_) return {};
  }
  std::string text = tokenizer_->decode(ids_, skip_special_);
  if (text.size() <= prefix_.size() || ends_with_replacement(text)) return {};
  // The window's text extends the prefix for every decoder keel reads; should a decoder ever rewrite earlier
  // text, emit from where the two diverge rather than lose text.
  size_t common = 0;
  while (common < prefix_.size() && text[common] == prefix_[common]) ++common;
  std::string delta = text.substr(common);
  const size_t kept = ids_.size() - prefix_index_;
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_index_));
  prefix_ = tokenizer_->decode(ids_, skip_special_);
  prefix_index_ = kept;
  return delta;
}

std::string StreamDecoder::flush() {
  std::string text = tokenizer_->decode(ids_, skip_special_);
  size_t common = 0;
  while (common < prefix_.size() && common < text.size() && text[common] == prefix_[common]) ++common;
  std::string delta = text.substr(common);
  ids_.clear();
  last_is_byte_token_ = false;
  prefix_.clear();
  prefix_index_ = 0;
  return delta;
}

}  // namespace keel::tokenizer
