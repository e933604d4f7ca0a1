// tokenizer.json "decoder": ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, Sequence. A decoder
// turns the token strings of a sequence into text; without one, tokens are joined with spaces (as the Rust
// library does).
#pragma once
#include <string>
#include <vector>

#include "tokenizer/json_fields.h"
#include "tokenizer/pattern.h"

namespace keel::tokenizer {

class Decoder {
 public:
  Decoder() = default;  // tokenizer.json "decoder": null
  static Decoder from_json(const json& j, const std::string& where);

  std::string decode(std::vector<std::string> tokens) const;
  bool has_byte_fallback() const;  // runs of <0xXX> tokens decode together (the stream holds them back)

 private:
  enum class Kind { byte_level, metaspace, byte_fallback, fuse, strip, replace };
  struct Step {
    Kind kind;
    char32_t content = 0;        // metaspace replacement, strip content
    bool prepend = true;         // metaspace: prepend_scheme != never
    size_t start = 0, stop = 0;  // strip counts
    Pattern pattern;             // replace
    std::string replacement;     // replace
  };
  static void parse_into(const json& j, const std::string& where, std::vector<Step>& steps, int depth = 0);
  static void apply(const Step& step, std::vector<std::string>& tokens);
  bool present_ = false;
  std::vector<Step> steps_;
};

}  // namespace keel::tokenizer
