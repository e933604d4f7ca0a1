// tokenizer.json "pre_tokenizer": Split, ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit,
// Punctuation, Sequence. A pre-tokenizer cuts normalized text into pieces (words); the model then encodes
// each piece alone.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/json_fields.h"
#include "tokenizer/pattern.h"

namespace keel::tokenizer {

struct Piece {
  std::string text;
  bool at_start;  // the piece begins at offset 0 of the caller's original text (Metaspace prepend_scheme
                  // "first")
};

// GPT-2's byte → printable character table (each byte maps to one code point < U+0144), and its inverse.
const std::string& byte_level_char(uint8_t byte);  // UTF-8 of the character that stands for `byte`
int byte_level_byte(char32_t cp);                  // the byte a character stands for, or -1
std::string byte_level_encode(std::string_view bytes);

class PreTokenizer {
 public:
  PreTokenizer() = default;  // keeps each piece whole (tokenizer.json "pre_tokenizer": null)
  static PreTokenizer from_json(const json& j, const std::string& where);

  std::vector<Piece> apply(std::vector<Piece> pieces) const;

 private:
  enum class Kind { split, byte_level, metaspace, digits, whitespace, whitespace_split, punctuation };
  enum class Prepend { always, never, first };
  struct Step {
    Kind kind;
    Pattern pattern;                                   // split
    std::shared_ptr<const Regex> regex;                // whitespace
    SplitBehavior behavior = SplitBehavior::isolated;  // split, punctuation
    bool invert = false;                               // split
    bool add_prefix_space = false, use_regex = true;   // byte_level
    std::string replacement;                           // metaspace (one character, as UTF-8)
    char32_t replacement_cp = 0;
    Prepend prepend = Prepend::always;
    bool metaspace_split = true;
    bool individual_digits = false;  // digits
  };
  static void parse_into(const json& j, const std::string& where, std::vector<Step>& steps, int depth = 0);
  static void apply_step(const Step& step, const Piece& piece, std::vector<Piece>& out);
  std::vector<Step> steps_;
};

}  // namespace keel::tokenizer
