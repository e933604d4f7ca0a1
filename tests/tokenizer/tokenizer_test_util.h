// Shared by the tokenizer tests: fixture paths, file reading, the llama.cpp .inp/.out format, and the
// vectors.json files recorded by tools/make_tokenizer_vectors.py with the Hugging Face tokenizers library.
#pragma once
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace keel::tokenizer::test {

inline std::string shared_tokenizers_dir() {
  return std::string(KEEL_SHARED_DIR) + "/fixtures/tokenizers";
}
inline std::string fixtures_dir() {
  return std::string(KEEL_SOURCE_DIR) + "/tests/fixtures/tokenizers";
}
inline std::string qwen3_dir() {
  return shared_tokenizers_dir() + "/qwen3";
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The Qwen3 tokenizer, loaded once per test binary.
inline const Tokenizer& qwen3() {
  static const Tokenizer tok = Tokenizer::load(qwen3_dir());
  return tok;
}

struct LlamaCppVector {
  std::string text;
  std::vector<TokenId> ids;
};

// ggml-vocab-<name>.gguf.inp / .out: strings separated by "\n__ggml_vocab_test__\n"; one line of ids per
// string.
inline std::vector<LlamaCppVector> read_llama_cpp_vectors(const std::string& name) {
  const std::string base = shared_tokenizers_dir() + "/vectors/ggml-vocab-" + name + ".gguf";
  const std::string inp = read_file(base + ".inp"), out = read_file(base + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<LlamaCppVector> v;
  size_t pos = 0;
  while (true) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) break;
    v.push_back({inp.substr(pos, next - pos), {}});
    pos = next + sep.size();
  }
  std::istringstream lines(out);
  std::string line;
  for (auto& vec : v) {
    if (!std::getline(lines, line))
      throw std::runtime_error("fewer id lines than strings in " + base + ".out");
    std::istringstream ids(line);
    TokenId id;
    while (ids >> id) vec.ids.push_back(id);
  }
  return v;
}

inline nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(read_file(path));
}

inline std::vector<TokenId> ids_of(const nlohmann::json& j) {
  return j.get<std::vector<TokenId>>();
}

inline std::string escaped(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out.push_back(static_cast<char>(c));
  }
  if (out.size() > 160) {
    out.resize(160);
    out.append("...");
  }
  return out;
}

inline std::string pieces_of(const Tokenizer& tok, const std::vector<TokenId>& ids) {
  std::string out;
  for (TokenId id : ids) out += fmt::format("[{}]", escaped(tok.id_to_token(id).value_or("?")));
  return out;
}

}  // namespace keel::tokenizer::test
