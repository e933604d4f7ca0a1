// fuzz-libs: keel_core keel_tokenizer

// libFuzzer target: tokenizer.json parsing, then encoding and decoding with what was parsed. The input is the
// tokenizer.json text, optionally followed by "\0\0" and a text to encode (otherwise a fixed hostile text is
// used). keel::Error is the only acceptable failure. Seeds in fuzz/corpus/tokenizer_fuzz/ are the tokenizers
// of tests/fixtures/tokenizers/ followed by texts from their hostile corpus, and malformed variants.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t sep = input.find(std::string_view("\0\0", 2));
  const std::string_view json = input.substr(0, sep);
  const std::string_view text =
      sep == std::string_view::npos
          ? std::string_view("Hello <s> w\xC3\xB6rld\t\t 123 <|im_start|>\xF0\x9F\x98\x80 ")
          : input.substr(sep + 2);
  try {
    const auto tok = keel::tokenizer::Tokenizer::from_json(json, {}, "fuzz/tokenizer.json");
    for (bool allow : {false, true}) {
      std::vector<keel::tokenizer::TokenId> ids;
      try {
        ids = tok.encode(text, {.allow_special = allow, .add_special_tokens = allow});
      } catch (const keel::Error&) {  // invalid UTF-8 in the text
      }
      (void)tok.decode(ids, allow);
      keel::tokenizer::StreamDecoder stream(tok, allow);
      for (auto id : ids) (void)stream.step(id);
      (void)stream.flush();
    }
    // Arbitrary ids, in and out of the vocabulary.
    std::vector<keel::tokenizer::TokenId> ids;
    for (size_t i = 0; i + 1 < text.size() && ids.size() < 64; i += 2)
      ids.push_back(static_cast<keel::tokenizer::TokenId>((uint8_t(text[i]) << 8 | uint8_t(text[i + 1])) %
                                                          (tok.vocab_size() + 8)));
    (void)tok.decode(ids, false);
  } catch (const keel::Error&) {
  }
  return 0;
}
