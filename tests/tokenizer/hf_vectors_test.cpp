// Every tokenizer under tests/fixtures/tokenizers/ against what the Hugging Face tokenizers library (0.23.2)
// answered for the same hostile corpus (tools/make_tokenizer_vectors.py): ids with added tokens matched, ids
// with special tokens not matched, ids with the post-processor's special tokens, decode with and without
// skip_special_tokens, and decodes of random id sequences.
#include <gtest/gtest.h>

#include <thread>

#include "tokenizer_test_util.h"

using namespace keel::tokenizer;
using namespace keel::tokenizer::test;

namespace {

class HfVectors : public ::testing::TestWithParam<std::string> {};

std::string describe(const Tokenizer& tok, const nlohmann::json& c, const char* field,
                     const std::vector<TokenId>& got) {
  return fmt::format("text \"{}\"\n  expected {}\n  got      {}", escaped(c["text"].get<std::string>()),
                     pieces_of(tok, ids_of(c[field])), pieces_of(tok, got));
}

TEST_P(HfVectors, EncodeAndDecodeMatchTheLibrary) {
  const std::string dir = fixtures_dir() + "/" + GetParam();
  const Tokenizer tok = Tokenizer::load(dir);
  const nlohmann::json v = read_json(dir + "/vectors.json");
  EXPECT_EQ(tok.vocab_size(), v["vocab_size_with_added"].get<TokenId>());
  int failures = 0;
  for (const auto& c : v["cases"]) {
    const std::string text = c["text"];
    const auto ids = tok.encode(text, {.allow_special = true});
    const auto ids_no = tok.encode(text, {.allow_special = false});
    const auto ids_add = tok.encode(text, {.allow_special = true, .add_special_tokens = true});
    if (ids != ids_of(c["ids"]) && ++failures <= 8) ADD_FAILURE() << describe(tok, c, "ids", ids);
    if (ids_no != ids_of(c["ids_no_special"]) && ++failures <= 8)
      ADD_FAILURE() << "(special not allowed) " << describe(tok, c, "ids_no_special", ids_no);
    if (ids_add != ids_of(c["ids_add_special"]) && ++failures <= 8)
      ADD_FAILURE() << "(add_special_tokens) " << describe(tok, c, "ids_add_special", ids_add);
    const auto expected_ids = ids_of(c["ids"]);
    EXPECT_EQ(tok.decode(expected_ids, false), c["decode"].get<std::string>()) << escaped(text);
    EXPECT_EQ(tok.decode(expected_ids, true), c["decode_skip_special"].get<std::string>()) << escaped(text);
  }
  EXPECT_EQ(failures, 0);
  for (const auto& r : v["random_decode"]) {
    const auto ids = ids_of(r["ids"]);
    EXPECT_EQ(tok.decode(ids, false), r["decode"].get<std::string>());
    EXPECT_EQ(tok.decode(ids, true), r["decode_skip_special"].get<std::string>());
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfVectors,
                         ::testing::Values("bpe_bytelevel", "bpe_llama3_split", "sp_bpe_legacy",
                                           "sp_bpe_metaspace", "sp_metaspace_always", "bpe_nfkc_digits",
                                           "bpe_prepend_replace_digits", "bpe_split_behaviors",
                                           "bpe_whitespace"));

// encode() is const and shared between request threads: four threads at once still give the library's ids.
TEST(HfVectorsThreads, ConcurrentEncodeMatchesTheLibrary) {
  const std::string dir = fixtures_dir() + "/bpe_llama3_split";
  const Tokenizer tok = Tokenizer::load(dir);
  const nlohmann::json v = read_json(dir + "/vectors.json");
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round)
        for (const auto& c : v["cases"])
          mismatches[static_cast<size_t>(t)] +=
              tok.encode(c["text"].get<std::string>(), {.allow_special = true}) != ids_of(c["ids"]);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
