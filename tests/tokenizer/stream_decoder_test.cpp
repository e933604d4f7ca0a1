// StreamDecoder: for many id sequences the concatenated deltas equal the full decode, which is itself checked
// against the Hugging Face library's recorded decodes; no delta ends inside a UTF-8 character (checked
// byte-wise here, independently of keel's UTF-8 code).
#include "tokenizer/stream_decoder.h"

#include <gtest/gtest.h>

#include <random>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer_test_util.h"

using namespace keel::tokenizer;
using namespace keel::tokenizer::test;

namespace {

// True when s ends at a character boundary: the last lead byte has all its continuation bytes.
bool ends_on_char_boundary(const std::string& s) {
  size_t cont = 0;
  for (size_t i = s.size(); i > 0; --i) {
    const auto b = static_cast<unsigned char>(s[i - 1]);
    if ((b & 0xC0) != 0x80) {
      const size_t need = b < 0x80 ? 0 : (b & 0xE0) == 0xC0 ? 1 : (b & 0xF0) == 0xE0 ? 2 : 3;
      return cont == need;
    }
    if (++cont > 3) return false;
  }
  return cont == 0;
}

// Streams ids one at a time; checks every delta and returns their concatenation (with the final flush).
std::string stream(const Tokenizer& tok, const std::vector<TokenId>& ids, bool skip_special) {
  StreamDecoder s(tok, skip_special);
  std::string all;
  for (TokenId id : ids) {
    const std::string delta = s.step(id);
    EXPECT_TRUE(ends_on_char_boundary(delta)) << "delta ends mid-character after id " << id;
    all += delta;
  }
  const std::string rest = s.flush();
  EXPECT_TRUE(ends_on_char_boundary(rest));
  return all + rest;
}

void check_tokenizer(const Tokenizer& tok, const nlohmann::json& vectors, uint32_t seed) {
  // The library's own random sequences: the stream must reproduce its decode exactly.
  for (const auto& r : vectors["random_decode"]) {
    const auto ids = ids_of(r["ids"]);
    EXPECT_EQ(stream(tok, ids, false), r["decode"].get<std::string>());
    EXPECT_EQ(stream(tok, ids, true), r["decode_skip_special"].get<std::string>());
  }
  // The encodings of the hostile corpus, streamed.
  for (const auto& c : vectors["cases"]) {
    const auto ids = ids_of(c["ids"]);
    EXPECT_EQ(stream(tok, ids, false), c["decode"].get<std::string>())
        << escaped(c["text"].get<std::string>());
  }
  // Fresh random sequences, compared with keel's full decode.
  std::mt19937 rng(seed);
  std::uniform_int_distribution<TokenId> any(0, tok.vocab_size() + 3);
  for (int k = 0; k < 300; ++k) {
    std::vector<TokenId> ids(1 + rng() % 40);
    for (auto& id : ids) id = any(rng);
    EXPECT_EQ(stream(tok, ids, false), tok.decode(ids, false));
    EXPECT_EQ(stream(tok, ids, true), tok.decode(ids, true));
  }
}

TEST(StreamDecoder, Qwen3ByteLevel) {
  check_tokenizer(qwen3(), read_json(fixtures_dir() + "/qwen3/vectors.json"), 1);
  // Multi-byte characters cut into single-byte tokens: text is held until each character completes.
  const std::string text =
      "a\xF0\x9F\x98\x80 \xE4\xB8\xAD\xE6\x96\x87 \xC3\xA9\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9";
  std::vector<TokenId> ids;
  for (char c : text) ids.push_back(*qwen3().token_to_id(byte_level_char(static_cast<uint8_t>(c))));
  StreamDecoder s(qwen3(), false);
  std::string all;
  int empty_steps = 0;
  for (TokenId id : ids) {
    const std::string d = s.step(id);
    empty_steps += d.empty();
    all += d;
  }
  EXPECT_EQ(all + s.flush(), text);
  EXPECT_EQ(empty_steps,
            3 + 2 + 2 + 1 + 3 + 2 + 3);  // continuation bytes wait for the end of their character
  // An invalid byte followed by nothing is flushed as U+FFFD at the end, as decode gives it.
  StreamDecoder t(qwen3(), false);
  EXPECT_EQ(t.step(*qwen3().token_to_id(byte_level_char(0xE4))), "");
  EXPECT_EQ(t.flush(), "\xEF\xBF\xBD");
}

class StreamDecoderFixtures : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamDecoderFixtures, DeltasConcatenateToTheLibrarysDecode) {
  const std::string dir = fixtures_dir() + "/" + GetParam();
  check_tokenizer(Tokenizer::load(dir), read_json(dir + "/vectors.json"), 2);
}

// SentencePiece byte fallback (Replace/ByteFallback/Fuse/Strip), Metaspace decoder, and no decoder at all.
INSTANTIATE_TEST_SUITE_P(Fixtures, StreamDecoderFixtures,
                         ::testing::Values("sp_bpe_legacy", "sp_bpe_metaspace", "sp_metaspace_always",
                                           "bpe_split_behaviors", "bpe_whitespace", "bpe_bytelevel"));

TEST(StreamDecoder, SentencePieceLeadingSpaceStrippedOnceAtStreamStart) {
  const Tokenizer tok = Tokenizer::load(fixtures_dir() + "/sp_bpe_legacy");
  const auto ids = tok.encode("Hello world again");
  ASSERT_GE(ids.size(), 3u);
  StreamDecoder s(tok, true);
  std::string all;
  for (TokenId id : ids) all += s.step(id);
  all += s.flush();
  EXPECT_EQ(all, "Hello world again");
}

}  // namespace
