// UTF-8 and Unicode helpers for the tokenizer, with the character classes of the Rust `tokenizers` library
// (char::is_whitespace, char::is_numeric, regex \w) so that keel splits where Hugging Face splits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace keel::tokenizer {

// Byte length of the UTF-8 sequence that starts with lead byte `b` (1 for continuation/invalid bytes).
inline size_t utf8_len(uint8_t b) {
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  if ((b & 0xF8) == 0xF0) return 4;
  return 1;
}

// Decodes the code point at s[i] (s valid UTF-8) and advances i past it.
char32_t next_codepoint(std::string_view s, size_t& i);
void append_utf8(std::string& out, char32_t cp);

// Offset of the first byte that is not part of a well-formed UTF-8 sequence (overlongs, surrogates and
// values above U+10FFFF are ill-formed), or npos when all of s is valid.
size_t find_invalid_utf8(std::string_view s);

// Rust's String::from_utf8_lossy: each maximal ill-formed subpart becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);

bool is_whitespace(char32_t cp);   // Unicode White_Space (Rust char::is_whitespace, regex \s)
bool is_numeric(char32_t cp);      // general category N* (Rust char::is_numeric)
bool is_word_char(char32_t cp);    // Rust regex \w: alphabetic, marks, Nd, Pc, join controls
bool is_mark(char32_t cp);         // general category M*
bool is_punctuation(char32_t cp);  // general category P* or ASCII punctuation

enum class NormalForm { nfc, nfd, nfkc, nfkd };
// s must be valid UTF-8; throws Error(internal) if utf8proc refuses it.
std::string normalize(std::string_view s, NormalForm form);
// Per-character full lowercase mapping (Rust char::to_lowercase, no context rules).
std::string lowercase(std::string_view s);

}  // namespace keel::tokenizer
