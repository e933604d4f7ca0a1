#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "core/mmap_file.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"

namespace keel::tokenizer {

struct Tokenizer::Impl {
  std::string name;
  BpeModel model;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  Decoder decoder;
  PostProcessor post_processor;
  AddedVocabulary added;
  std::optional<TokenId> bos, eos, pad;
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

namespace {

json parse_json(std::string_view text, const std::string& name) {
  // nlohmann's parser is not recursive; the readers below bound the nesting they follow (Sequence
  // normalizers / pre-tokenizers) and name the field that is too deep.
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    throw_error(ErrorCode::invalid_file, "{}: not valid JSON: {}", name, e.what());
  }
}

std::vector<AddedToken> parse_added_tokens(const json& root, const std::string& name, TokenId model_size) {
  std::vector<AddedToken> tokens;
  auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return tokens;
  const std::string where = name + ": added_tokens";
  if (!it->is_array()) throw_error(ErrorCode::invalid_file, "{}: expected an array", where);
  // Ids index a dense table: they may not run far past the vocabulary.
  const int64_t id_limit = 2 * (static_cast<int64_t>(model_size) + static_cast<int64_t>(it->size())) + 65536;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& t = (*it)[i];
    const std::string w = where + "[" + std::to_string(i) + "]";
    const json& id = json_required(t, "id", w);
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= id_limit)
      throw_error(ErrorCode::invalid_file, "{}.id: expected an id in [0, {}), got {}", w, id_limit,
                  json_preview(id));
    AddedToken a;
    a.id = id.get<TokenId>();
    a.content = json_string(t, "content", w);
    a.single_word = json_bool(t, "single_word", false, w);
    a.lstrip = json_bool(t, "lstrip", false, w);
    a.rstrip = json_bool(t, "rstrip", false, w);
    a.special = json_bool(t, "special", false, w);
    a.normalized = json_bool(t, "normalized", !a.special, w);
    tokens.push_back(std::move(a));
  }
  return tokens;
}

// tokenizer_config.json's "bos_token": "<s>" or {"content": "<s>", ...} or null.
std::optional<std::string> config_token(const json& config, const char* key, const std::string& name) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return json_string(*it, "content", name + ": " + key);
  throw_error(ErrorCode::invalid_file, "{}: {}: expected a string, {{\"content\": ...}} or null, got {}",
              name, key, json_preview(*it));
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& dir) {
  const std::string path = dir + "/tokenizer.json";
  MappedFile file(path);
  std::string config;
  const std::string config_path = dir + "/tokenizer_config.json";
  if (FILE* f = std::fopen(config_path.c_str(), "rb")) {
    std::fclose(f);
    MappedFile cf(config_path);
    config.assign(reinterpret_cast<const char*>(cf.data()), static_cast<size_t>(cf.size()));
  }
  return from_json(
      std::string_view(reinterpret_cast<const char*>(file.data()), static_cast<size_t>(file.size())), config,
      path);
}

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view config_json,
                               const std::string& name) {
  const json root = parse_json(tokenizer_json, name);
  if (!root.is_object()) throw_error(ErrorCode::invalid_file, "{}: expected a JSON object at the top", name);
  auto impl = std::make_unique<Impl>();
  impl->name = name;

  const std::string model_where = name + ": model";
  const json& model = json_required(root, "model", name);
  std::string type = model.is_object() && model.contains("type") ? json_type(model, model_where) : "";
  if (type.empty() && model.is_object() && model.contains("merges")) type = "BPE";  // untagged, as HF infers
  if (type != "BPE")
    throw_error(ErrorCode::unsupported, "{}.type: model type \"{}\" is not supported (keel reads BPE)",
                model_where, type);
  impl->model = BpeModel::from_json(model, model_where);

  auto section = [&](const char* key) -> const json& {
    static const json null_value;
    auto it = root.find(key);
    return it == root.end() ? null_value : *it;
  };
  impl->normalizer = Normalizer::from_json(section("normalizer"), name + ": normalizer");
  impl->pre_tokenizer = PreTokenizer::from_json(section("pre_tokenizer"), name + ": pre_tokenizer");
  impl->decoder = Decoder::from_json(section("decoder"), name + ": decoder");
  impl->post_processor = PostProcessor::from_json(section("post_processor"), name + ": post_processor");
  impl->added = AddedVocabulary(parse_added_tokens(root, name, impl->model.vocab_size()), impl->normalizer);

  Tokenizer tok(std::move(impl));
  if (!config_json.empty()) {
    const std::string config_name = name.size() >= 14 && name.ends_with("tokenizer.json")
                                        ? name.substr(0, name.size() - 14) + "tokenizer_config.json"
                                        : "tokenizer_config.json";
    const json config = parse_json(config_json, config_name);
    if (!config.is_object()) throw_error(ErrorCode::invalid_file, "{}: expected a JSON object", config_name);
    auto resolve = [&](const char* key) -> std::optional<TokenId> {
      auto content = config_token(config, key, config_name);
      if (!content) return std::nullopt;
      auto id = tok.token_to_id(*content);
      if (!id)
        throw_error(ErrorCode::invalid_file, "{}: {} \"{}\" is not a token of {}", config_name, key, *content,
                    name);
      return id;
    };
    tok.impl_->bos = resolve("bos_token");
    tok.impl_->eos = resolve("eos_token");
    tok.impl_->pad = resolve("pad_token");
  }
  return tok;
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, EncodeOptions options) const {
  if (const size_t bad = find_invalid_utf8(text); bad != std::string_view::npos)
    throw_error(ErrorCode::invalid_argument, "tokenizer: text is not valid UTF-8 (byte {} of {}: 0x{:02X})",
                bad, text.size(), static_cast<uint8_t>(text[bad]));
  const Impl& t = *impl_;
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 4);
  const auto literal = options.allow_special ? options.literal : std::span<const std::pair<size_t, size_t>>{};
  auto meets_literal = [&](size_t begin, size_t end) {  // literal is ascending and disjoint
    auto it = std::upper_bound(literal.begin(), literal.end(), begin,
                               [](size_t b, const std::pair<size_t, size_t>& r) { return b < r.second; });
    return it != literal.end() && it->first < end;
  };
  for (const Segment& seg : t.added.split(text, false, options.allow_special, literal)) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    const std::string_view raw = text.substr(seg.start, seg.end - seg.start);
    std::string normalized_storage;
    std::string_view normalized = raw;
    if (!t.normalizer.empty()) {
      normalized_storage = t.normalizer.apply(raw);
      normalized = normalized_storage;
    }
    const bool specials_here =
        options.allow_special && !(!literal.empty() && meets_literal(seg.start, seg.end));
    for (const Segment& sub : t.added.split(normalized, true, specials_here)) {
      if (sub.id >= 0) {
        ids.push_back(sub.id);
        continue;
      }
      std::vector<Piece> pieces;
      pieces.push_back(
          {std::string(normalized.substr(sub.start, sub.end - sub.start)), seg.start == 0 && sub.start == 0});
      for (const Piece& p : t.pre_tokenizer.apply(std::move(pieces))) t.model.encode(p.text, ids);
    }
  }
  if (options.add_special_tokens) ids = t.post_processor.apply(std::move(ids));
  return ids;
}

const std::string* Tokenizer::decode_piece(TokenId id, bool skip_special) const {
  const Impl& t = *impl_;
  const AddedToken* added = t.added.find(id);
  const std::string* token = added != nullptr ? &added->piece : t.model.id_to_token(id);
  if (token == nullptr) return nullptr;
  if (skip_special) {
    // The Rust library checks the token's text against the special tokens' contents.
    const AddedToken* a = t.added.find(*token);
    if (a != nullptr && a->special) return nullptr;
  }
  return token;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (TokenId id : ids)
    if (const std::string* token = decode_piece(id, skip_special)) tokens.push_back(*token);
  return impl_->decoder.decode(std::move(tokens));
}

std::optional<TokenId> Tokenizer::token_to_id(std::string_view token) const {
  if (const AddedToken* a = impl_->added.find(token)) return a->id;
  return impl_->model.token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(TokenId id) const {
  if (const AddedToken* a = impl_->added.find(id)) return a->piece;
  if (const std::string* s = impl_->model.id_to_token(id)) return *s;
  return std::nullopt;
}

TokenId Tokenizer::vocab_size() const {
  TokenId n = impl_->model.vocab_size();
  for (const AddedToken& a : impl_->added.tokens()) n = std::max(n, a.id + 1);
  return n;
}

bool Tokenizer::is_special(TokenId id) const {
  const AddedToken* a = impl_->added.find(id);
  return a != nullptr && a->special;
}

const std::vector<AddedToken>& Tokenizer::added_tokens() const {
  return impl_->added.tokens();
}
std::optional<TokenId> Tokenizer::bos_id() const {
  return impl_->bos;
}
std::optional<TokenId> Tokenizer::eos_id() const {
  return impl_->eos;
}
std::optional<TokenId> Tokenizer::pad_id() const {
  return impl_->pad;
}
void Tokenizer::clear_cache() const {
  impl_->model.clear_cache();
}
bool Tokenizer::decoder_has_byte_fallback() const {
  return impl_->decoder.has_byte_fallback();
}

}  // namespace keel::tokenizer
