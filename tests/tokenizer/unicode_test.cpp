// UTF-8 handling against the Unicode Standard's own examples, and the Oniguruma-compatible regex classes.
#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

#include "tokenizer/regex.h"

using namespace keel::tokenizer;

namespace {

const std::string R = "\xEF\xBF\xBD";  // U+FFFD

TEST(Unicode, LossyDecodingReplacesMaximalSubparts) {
  // The Unicode Standard 15, section 3.9, Table 3-8: U+FFFD for each maximal subpart of an ill-formed
  // sequence.
  EXPECT_EQ(utf8_lossy("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "a" + R + R + R + "b" + R + "c" + R + R + "d");
  // Table 3-9/3-10/3-11 style cases: overlong, surrogate and out-of-range leads are single-byte subparts.
  EXPECT_EQ(utf8_lossy("\xC0\xAF\xE0\x80\xBF\xF0\x81\x82\x41"), R + R + R + R + R + R + R + R + "A");
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80\xED\xBF\xBF\xED\xAF\x41"), R + R + R + R + R + R + R + R + "A");
  EXPECT_EQ(utf8_lossy("\xF4\x91\x92\x93\xFF\x41\x80\xBF\x42"), R + R + R + R + R + "A" + R + R + "B");
  EXPECT_EQ(utf8_lossy("\xE1\x80\xE2\xF0\x91\x92\xF1\xBF\x41"), R + R + R + R + "A");
  // Rust's documented example: String::from_utf8_lossy(b"Hello \xF0\x90\x80World") == "Hello �World".
  EXPECT_EQ(utf8_lossy("Hello \xF0\x90\x80World"), "Hello " + R + "World");
  EXPECT_EQ(utf8_lossy("ok \xF0\x9F\x98\x80"), "ok \xF0\x9F\x98\x80");
}

TEST(Unicode, Validation) {
  EXPECT_EQ(find_invalid_utf8("plain \xC3\xA9 \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF"), std::string::npos);
  EXPECT_EQ(find_invalid_utf8("ab\xC0\x80"), 2u);         // overlong
  EXPECT_EQ(find_invalid_utf8("\xED\xA0\x80"), 0u);       // surrogate
  EXPECT_EQ(find_invalid_utf8("x\xF4\x90\x80\x80"), 1u);  // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("xy\xE2\x82"), 2u);         // truncated
}

TEST(Unicode, CharacterClasses) {
  // White_Space (PropList.txt): includes NEL U+0085 and U+3000, excludes U+180E (since Unicode 6.3) and
  // U+200B.
  for (char32_t c : {U'\t', U'\n', U'\r', U' ', U'\u0085', U'\u00a0', U'\u2009', U'\u2028', U'\u3000'})
    EXPECT_TRUE(is_whitespace(c)) << static_cast<uint32_t>(c);
  for (char32_t c : {U'a', U'\u180e', U'\u200b', U'\ufeff', U'\u0000'}) EXPECT_FALSE(is_whitespace(c));
  EXPECT_TRUE(is_numeric(U'7'));
  EXPECT_TRUE(is_numeric(U'\u0663'));  // ARABIC-INDIC DIGIT THREE, Nd
  EXPECT_TRUE(is_numeric(U'\u00bd'));  // ½, No
  EXPECT_TRUE(is_numeric(U'\u2167'));  // Ⅷ, Nl
  EXPECT_FALSE(is_numeric(U'x'));
  EXPECT_TRUE(is_word_char(U'\u0301'));  // combining acute: Mn is \w
  EXPECT_FALSE(is_word_char(U'\u00bd'));
}

TEST(Unicode, NormalizationAndLowercase) {
  EXPECT_EQ(normalize("e\xCC\x81", NormalForm::nfc), "\xC3\xA9");
  EXPECT_EQ(normalize("\xC3\xA9", NormalForm::nfd), "e\xCC\x81");
  EXPECT_EQ(normalize("\xEF\xAC\x81", NormalForm::nfkc), "fi");  // U+FB01 LATIN SMALL LIGATURE FI
  EXPECT_EQ(normalize("\xEF\xAC\x81", NormalForm::nfc), "\xEF\xAC\x81");
  EXPECT_EQ(lowercase("\xC4\xB0stanbul"), "i\xCC\x87stanbul");  // U+0130 → i + U+0307 (SpecialCasing.txt)
  EXPECT_EQ(lowercase("ABC \xCE\xA3"), "abc \xCF\x83");         // Σ → σ, no final-sigma context rule
}

TEST(Regex, OnigurumaClasses) {
  std::vector<std::pair<size_t, size_t>> m;
  Regex space(R"(\s+)", "test");
  space.find_all("a\u180e b\u0085c", m);
  // U+180E is not White_Space; " " and NEL are.
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0], std::make_pair(size_t{4}, size_t{5}));
  EXPECT_EQ(m[1], std::make_pair(size_t{6}, size_t{8}));
  m.clear();
  Regex word(R"(\w+|[^\w\s]+)", "test");
  word.find_all("cafe\u0301 x!", m);  // the combining mark belongs to the word
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0], std::make_pair(size_t{0}, size_t{6}));
  EXPECT_EQ(translate_onig_pattern(R"([^\s\p{L}])"),
            std::string("[^") + R"(\x{9}-\x{d}\x{20}\x{85}\x{a0}\x{1680})" +
                R"(\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f})" + R"(\x{3000}\p{L}])");
}

TEST(Regex, EmptyMatchesStepLikeOnig) {
  std::vector<std::pair<size_t, size_t>> m;
  Regex r("x*", "test");
  r.find_all("axxb", m);
  // onig find_iter: (0,0), (1,3), then the empty match at 3 right after a match is skipped, (4,4).
  EXPECT_EQ(m, (std::vector<std::pair<size_t, size_t>>{{0, 0}, {1, 3}, {4, 4}}));
}

}  // namespace
