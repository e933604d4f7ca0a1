// The Qwen3 tokenizer.json (../shared/fixtures/tokenizers/qwen3) against outside oracles: llama.cpp's qwen2
// and qwen35 input → ids vectors (produced with HF transformers), and the Hugging Face tokenizers library's
// recordings in tests/fixtures/tokenizers/qwen3/vectors.json (special tokens allowed and not, decodes, random
// id decodes).
#include <gtest/gtest.h>

#include "tokenizer_test_util.h"

using namespace keel::tokenizer;
using namespace keel::tokenizer::test;

namespace {

TEST(Qwen3, LlamaCppQwen2VectorsExactAndRoundTrip) {
  const auto vectors = read_llama_cpp_vectors("qwen2");
  ASSERT_EQ(vectors.size(), 46u);
  int exact = 0;
  for (const auto& v : vectors) {
    const auto ids = qwen3().encode(v.text);
    if (ids == v.ids)
      ++exact;
    else
      ADD_FAILURE() << "\"" << escaped(v.text) << "\"\n  expected " << pieces_of(qwen3(), v.ids)
                    << "\n  got      " << pieces_of(qwen3(), ids);
    EXPECT_EQ(qwen3().decode(v.ids), v.text);
  }
  EXPECT_EQ(exact, 46);
}

std::u32string to_u32(const std::string& s) {
  std::u32string out;
  size_t i = 0;
  while (i < s.size()) out.push_back(next_codepoint(s, i));
  return out;
}

bool has_combining_mark(const std::string& s) {
  for (char32_t cp : to_u32(s))
    if (cp >= 0x300 && cp <= 0x36F) return true;
  return false;
}

TEST(Qwen3, LlamaCppQwen35VectorsAndNfc) {
  const auto vectors = read_llama_cpp_vectors("qwen35");
  ASSERT_EQ(vectors.size(), 50u);
  int exact = 0, nfc_cases = 0;
  for (const auto& v : vectors) {
    const auto ids = qwen3().encode(v.text);
    if (has_combining_mark(v.text)) {
      // Qwen3.5 keeps combining marks, Qwen3 applies NFC: the decomposed input must tokenize as the
      // precomposed.
      ++nfc_cases;
      const std::string composed = normalize(v.text, NormalForm::nfc);
      EXPECT_NE(composed, v.text);
      EXPECT_EQ(ids, qwen3().encode(composed)) << escaped(v.text);
      continue;
    }
    if (ids == v.ids)
      ++exact;
    else
      ADD_FAILURE() << "\"" << escaped(v.text) << "\"\n  expected " << pieces_of(qwen3(), v.ids)
                    << "\n  got      " << pieces_of(qwen3(), ids);
  }
  EXPECT_EQ(exact, 47);
  EXPECT_EQ(nfc_cases, 3);
  // The precomposed form is one token (é = 963), the library's answer for e + U+0301.
  EXPECT_EQ(qwen3().encode("e\xCC\x81"), std::vector<TokenId>{963});
}

TEST(Qwen3, ChatMarkersAreSingleIdsOnlyWhenAllowed) {
  const std::string rendered =
      "<|im_start|>user\nWhat is "
      "2+2?<|im_end|>\n<|im_start|>assistant\n<think>\nSimple.\n</think>\n\n4<|im_end|>";
  const auto allowed = qwen3().encode(rendered, {.allow_special = true});
  auto count = [](const std::vector<TokenId>& ids, TokenId id) {
    return std::count(ids.begin(), ids.end(), id);
  };
  EXPECT_EQ(count(allowed, 151644), 2);  // <|im_start|>
  EXPECT_EQ(count(allowed, 151645), 2);  // <|im_end|>
  EXPECT_EQ(count(allowed, 151667), 1);  // <think>
  EXPECT_EQ(count(allowed, 151668), 1);  // </think>
  EXPECT_EQ(allowed.front(), 151644);
  EXPECT_EQ(qwen3().decode(allowed), rendered);

  // Not allowed: special tokens go through BPE ("<", "|", "im", "_start", "|", ">"...); <think> and </think>
  // are "special": false in Qwen3's added_tokens, and the library matches those always, so they stay single
  // ids.
  const auto raw = qwen3().encode(rendered, {.allow_special = false});
  EXPECT_EQ(count(raw, 151644), 0);
  EXPECT_EQ(count(raw, 151645), 0);
  EXPECT_EQ(count(raw, 151667), 1);
  EXPECT_EQ(count(raw, 151668), 1);
  EXPECT_GT(raw.size(), allowed.size());
  EXPECT_EQ(qwen3().decode(raw), rendered);
  for (TokenId id : raw) {
    if (id != 151667 && id != 151668) {
      EXPECT_LT(id, 151643) << "only ordinary tokens and <think>/</think> expected";
    }
  }
}

TEST(Qwen3, SpecialIdsFromConfig) {
  EXPECT_EQ(qwen3().vocab_size(), 151669);
  EXPECT_FALSE(qwen3().bos_id().has_value());  // "bos_token": null
  EXPECT_EQ(qwen3().eos_id(), 151645);         // <|im_end|>
  EXPECT_EQ(qwen3().pad_id(), 151643);         // <|endoftext|>
  EXPECT_EQ(qwen3().token_to_id("<|im_start|>"), 151644);
  EXPECT_EQ(qwen3().id_to_token(151667), "<think>");
  EXPECT_TRUE(qwen3().is_special(151644));
  EXPECT_FALSE(qwen3().is_special(151667));
  EXPECT_EQ(qwen3().token_to_id("\xC4\xA0the"), 279);  // "Ġthe"
}

TEST(Qwen3, HuggingFaceRecordings) {
  const nlohmann::json v = read_json(fixtures_dir() + "/qwen3/vectors.json");
  EXPECT_EQ(qwen3().vocab_size(), v["vocab_size_with_added"].get<TokenId>());
  for (const auto& c : v["cases"]) {
    const std::string text = c["text"];
    const auto ids = qwen3().encode(text, {.allow_special = true});
    const auto ids_no = qwen3().encode(text, {.allow_special = false});
    EXPECT_EQ(ids, ids_of(c["ids"])) << escaped(text) << "\n  got " << pieces_of(qwen3(), ids);
    EXPECT_EQ(ids_no, ids_of(c["ids_no_special"]))
        << escaped(text) << "\n  got " << pieces_of(qwen3(), ids_no);
    EXPECT_EQ(qwen3().encode(text, {.allow_special = true, .add_special_tokens = true}),
              ids_of(c["ids_add_special"]));
    EXPECT_EQ(qwen3().decode(ids_of(c["ids"]), false), c["decode"].get<std::string>());
    EXPECT_EQ(qwen3().decode(ids_of(c["ids"]), true), c["decode_skip_special"].get<std::string>());
  }
  for (const auto& r : v["random_decode"]) {
    EXPECT_EQ(qwen3().decode(ids_of(r["ids"]), false), r["decode"].get<std::string>());
    EXPECT_EQ(qwen3().decode(ids_of(r["ids"]), true), r["decode_skip_special"].get<std::string>());
  }
}

}  // namespace
