// tokenizer.json "normalizer": NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace, Prepend,
// Sequence. A normalizer maps a string to a string; it runs on each stretch of text between added tokens.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/json_fields.h"
#include "tokenizer/pattern.h"
#include "tokenizer/unicode.h"

namespace keel::tokenizer {

class Normalizer {
 public:
  Normalizer() = default;  // the identity (tokenizer.json "normalizer": null)
  static Normalizer from_json(const json& j, const std::string& where);

  bool empty() const { return steps_.empty(); }
  std::string apply(std::string_view s) const;

 private:
  enum class Kind { unicode, lowercase, strip, strip_accents, replace, prepend };
  struct Step {
    Kind kind;
    NormalForm form = NormalForm::nfc;
    bool strip_left = false, strip_right = false;
    Pattern pattern;
    std::string content;  // Replace's replacement, Prepend's prefix
  };
  static void parse_into(const json& j, const std::string& where, std::vector<Step>& steps, int depth = 0);
  std::vector<Step> steps_;
};

}  // namespace keel::tokenizer
