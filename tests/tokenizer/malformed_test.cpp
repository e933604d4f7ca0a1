// Malformed tokenizer.json / tokenizer_config.json and bad input: a keel::Error with the right code that
// names the file and the field, never a crash.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer_test_util.h"

using namespace keel;
using namespace keel::tokenizer;
using namespace keel::tokenizer::test;

namespace {

// A minimal valid byte-level BPE: vocab a, b, ab; one merge.
const char* kModel = R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";

std::string with_model(const std::string& rest) {
  return std::string("{") + kModel + rest + "}";
}

void expect_error(const std::string& json, ErrorCode code, std::vector<std::string> parts,
                  const std::string& config = {}) {
  try {
    Tokenizer::from_json(json, config, "models/x/tokenizer.json");
    ADD_FAILURE() << "no error for " << json.substr(0, 200);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << "\n  lacks: " << p;
  }
}

TEST(Malformed, TheMinimalFileLoads) {
  const Tokenizer tok = Tokenizer::from_json(with_model(""));
  EXPECT_EQ(tok.encode("abba"), (std::vector<TokenId>{2, 1, 0}));
}

TEST(Malformed, NotJsonOrTruncated) {
  expect_error("", ErrorCode::invalid_file, {"models/x/tokenizer.json", "not valid JSON"});
  expect_error("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0", ErrorCode::invalid_file,
               {"models/x/tokenizer.json", "not valid JSON"});
  expect_error("[1, 2]", ErrorCode::invalid_file, {"object at the top"});
  expect_error("{\"model\": \"\xff\"}", ErrorCode::invalid_file, {"not valid JSON"});
  const std::string real = read_file(qwen3_dir() + "/tokenizer.json");
  for (size_t cut : {size_t{1}, real.size() / 3, real.size() - 2})
    expect_error(real.substr(0, cut), ErrorCode::invalid_file, {"models/x/tokenizer.json", "not valid JSON"});
}

TEST(Malformed, Model) {
  expect_error("{}", ErrorCode::invalid_file, {"missing field \"model\""});
  expect_error(R"({"model": {"type": "WordPiece", "vocab": {}}})", ErrorCode::unsupported,
               {"model.type", "WordPiece"});
  expect_error(R"({"model": {"type": 7}})", ErrorCode::invalid_file, {"model.type", "expected a string"});
  expect_error(R"({"model": {"type": "BPE", "merges": []}})", ErrorCode::invalid_file,
               {"model", "\"vocab\""});
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}}})", ErrorCode::invalid_file,
               {"model", "\"merges\""});
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})", ErrorCode::invalid_file,
               {"model.vocab[\"a\"]"});
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": "0"}, "merges": []}})", ErrorCode::invalid_file,
               {"model.vocab[\"a\"]"});
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": "<unk>"}})",
               ErrorCode::invalid_file, {"model.unk_token", "<unk>"});
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": 0.1}})",
               ErrorCode::unsupported, {"model.dropout"});
}

TEST(Malformed, Merges) {
  const std::string v = R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": )";
  expect_error(v + R"(["a c"]}})", ErrorCode::invalid_file, {"model.merges[0]", "\"c\" is not in"});
  expect_error(v + R"(["a b", "b a"]}})", ErrorCode::invalid_file, {"model.merges[1]", "\"ba\""});
  expect_error(v + R"(["ab"]}})", ErrorCode::invalid_file, {"model.merges[0]", "two tokens"});
  expect_error(v + R"(["a b c"]}})", ErrorCode::invalid_file, {"model.merges[0]"});
  expect_error(v + R"([["a"]]}})", ErrorCode::invalid_file, {"model.merges[0]"});
  expect_error(v + R"([42]}})", ErrorCode::invalid_file, {"model.merges[0]"});
  expect_error(v + R"({"a": "b"}}})", ErrorCode::invalid_file, {"model.merges", "array"});
}

TEST(Malformed, Pipeline) {
  expect_error(with_model(R"(, "pre_tokenizer": {"type": "Magic"})"), ErrorCode::unsupported,
               {"pre_tokenizer", "Magic"});
  expect_error(with_model(R"(, "pre_tokenizer": {"pretokenizers": []})"), ErrorCode::invalid_file,
               {"pre_tokenizer", "\"type\""});
  expect_error(with_model(R"(, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split",
               "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"}]})"),
               ErrorCode::invalid_file, {"pre_tokenizer.pretokenizers[0].pattern", "does not compile"});
  expect_error(with_model(R"(, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "a"}})"),
               ErrorCode::invalid_file, {"pre_tokenizer", "\"behavior\""});
  expect_error(
      with_model(
          R"(, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Sideways"})"),
      ErrorCode::invalid_file, {"pre_tokenizer.behavior", "Sideways"});
  expect_error(with_model(R"(, "pre_tokenizer": {"type": "Split", "pattern": "a", "behavior": "Isolated"})"),
               ErrorCode::invalid_file, {"pre_tokenizer.pattern"});
  expect_error(with_model(R"(, "pre_tokenizer": {"type": "Metaspace", "replacement": "ab"})"),
               ErrorCode::invalid_file, {"pre_tokenizer.replacement", "one character"});
  expect_error(
      with_model(R"(, "pre_tokenizer": {"type": "Metaspace", "replacement": "_", "prepend_scheme": "x"})"),
      ErrorCode::invalid_file, {"pre_tokenizer.prepend_scheme"});
  expect_error(with_model(R"(, "normalizer": {"type": "Precompiled", "precompiled_charsmap": ""})"),
               ErrorCode::unsupported, {"normalizer", "Precompiled"});
  expect_error(with_model(R"(, "normalizer": {"type": "Sequence", "normalizers": [{"type": "Replace"}]})"),
               ErrorCode::invalid_file, {"normalizer.normalizers[0]", "\"pattern\""});
  expect_error(with_model(R"(, "decoder": {"type": "WordPiece"})"), ErrorCode::unsupported,
               {"decoder", "WordPiece"});
  expect_error(with_model(R"(, "decoder": {"type": "Strip", "content": " ", "start": -1})"),
               ErrorCode::invalid_file, {"decoder"});
  expect_error(with_model(R"(, "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken":
               {"id": "<s>", "type_id": 0}}], "special_tokens": {}})"),
               ErrorCode::invalid_file, {"post_processor.single[0]", "<s>"});
}

TEST(Malformed, AddedTokensAndConfig) {
  expect_error(with_model(R"(, "added_tokens": [{"content": "<s>"}])"), ErrorCode::invalid_file,
               {"added_tokens[0]", "\"id\""});
  expect_error(with_model(R"(, "added_tokens": [{"id": 5, "content": "<s>", "special": "yes"}])"),
               ErrorCode::invalid_file, {"added_tokens[0].special"});
  expect_error(with_model(R"(, "added_tokens": {"id": 5})"), ErrorCode::invalid_file,
               {"added_tokens", "array"});
  expect_error(with_model(""), ErrorCode::invalid_file,
               {"models/x/tokenizer_config.json", "bos_token", "<s>"}, R"({"bos_token": "<s>"})");
  expect_error(with_model(""), ErrorCode::invalid_file, {"models/x/tokenizer_config.json", "not valid JSON"},
               "{");
  expect_error(with_model(""), ErrorCode::invalid_file, {"eos_token"}, R"({"eos_token": 3})");
  const Tokenizer tok =
      Tokenizer::from_json(with_model(R"(, "added_tokens": [{"id": 5, "content": "<s>",
      "special": true}])"),
                           R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": null})");
  EXPECT_EQ(tok.bos_id(), 5);
  EXPECT_FALSE(tok.eos_id().has_value());
}

TEST(Malformed, DeeplyNestedJson) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  expect_error(with_model(", \"normalizer\": " + deep), ErrorCode::invalid_file, {"normalizer", "array"});
  expect_error(with_model(", \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": " + deep + "}"),
               ErrorCode::invalid_file, {"pre_tokenizer.pretokenizers[0]"});
}

TEST(Malformed, SparseIdsAndDeepSequences) {
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 900000000}, "merges": []}})",
               ErrorCode::invalid_file, {"model.vocab", "900000000", "dense"});
  expect_error(with_model(R"(, "added_tokens": [{"id": 800000000, "content": "<s>"}])"),
               ErrorCode::invalid_file, {"added_tokens[0].id", "800000000"});
  std::string nested = R"({"type": "NFC"})";
  for (int i = 0; i < 40; ++i) nested = R"({"type": "Sequence", "normalizers": [)" + nested + "]}";
  expect_error(with_model(", \"normalizer\": " + nested), ErrorCode::invalid_file,
               {"normalizer", "nested more than"});
  std::string shallow = R"({"type": "NFC"})";
  for (int i = 0; i < 8; ++i) shallow = R"({"type": "Sequence", "normalizers": [)" + shallow + "]}";
  EXPECT_EQ(Tokenizer::from_json(with_model(", \"normalizer\": " + shallow)).encode("ab"),
            std::vector<TokenId>{2});
}

TEST(Malformed, MissingFilesAndBadText) {
  try {
    Tokenizer::load("/nonexistent/model");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_file);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model/tokenizer.json"), std::string::npos) << e.what();
  }
  const Tokenizer tok = Tokenizer::from_json(with_model(""));
  for (std::string bad : {"a\xff", "\xc0\x80", "\xed\xa0\x80", "ab\xe2\x82", "\xf4\x90\x80\x80"}) {
    try {
      tok.encode(bad);
      ADD_FAILURE() << "accepted invalid UTF-8";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("UTF-8"), std::string::npos);
    }
  }
}

}  // namespace
