#include "tokenizer/bpe.h"

#include <algorithm>
#include <mutex>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace keel::tokenizer {

struct BpeModel::Cache {
  std::mutex mutex;
  std::unordered_map<std::string, std::vector<TokenId>, StringHash, std::equal_to<>> words;
};

BpeModel::BpeModel() : cache_(std::make_unique<Cache>()) {
  std::fill(std::begin(byte_ids_), std::end(byte_ids_), -1);
}
BpeModel::BpeModel(BpeModel&&) noexcept = default;
BpeModel& BpeModel::operator=(BpeModel&&) noexcept = default;
BpeModel::~BpeModel() = default;

BpeModel BpeModel::from_json(const json& model, const std::string& where) {
  BpeModel m;
  const json& vocab = json_required(model, "vocab", where);
  if (!vocab.is_object())
    throw_error(ErrorCode::invalid_file, "{}.vocab: expected an object of token: id", where);
  m.vocab_.reserve(vocab.size());
  TokenId max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() >= (1 << 30))
      throw_error(ErrorCode::invalid_file, "{}.vocab[\"{}\"]: expected an id in [0, 2^30), got {}", where,
                  it.key(), json_preview(it.value()));
    const auto id = static_cast<TokenId>(it.value().get<int64_t>());
    m.vocab_.insert_or_assign(it.key(), id);
    max_id = std::max(max_id, id);
  }
  // Ids index dense tables: a vocab whose ids run far past its size is refused rather than allocated.
  if (max_id >= static_cast<TokenId>(2 * m.vocab_.size() + 65536))
    throw_error(ErrorCode::invalid_file,
                "{}.vocab: id {} is far beyond the vocabulary's {} entries (ids must be dense)", where,
                max_id, m.vocab_.size());
  m.id_to_token_.resize(static_cast<size_t>(max_id + 1));
  m.has_id_.assign(static_cast<size_t>(max_id + 1), 0);
  for (const auto& [token, id] : m.vocab_) {
    m.id_to_token_[static_cast<size_t>(id)] = token;
    m.has_id_[static_cast<size_t>(id)] = 1;
  }

  if (auto dropout = model.find("dropout"); dropout != model.end() && !dropout->is_null()) {
    if (!dropout->is_number() || dropout->get<double>() != 0.0)
      throw_error(ErrorCode::unsupported,
                  "{}.dropout: BPE dropout {} is not supported (inference is deterministic)", where,
                  json_preview(*dropout));
  }
  m.prefix_ = json_optional_string(model, "continuing_subword_prefix", where).value_or("");
  m.suffix_ = json_optional_string(model, "end_of_word_suffix", where).value_or("");
  m.fuse_unk_ = json_bool(model, "fuse_unk", false, where);
  m.byte_fallback_ = json_bool(model, "byte_fallback", false, where);
  m.ignore_merges_ = json_bool(model, "ignore_merges", false, where);
  if (auto unk = json_optional_string(model, "unk_token", where)) {
    auto it = m.vocab_.find(*unk);
    if (it == m.vocab_.end())
      throw_error(ErrorCode::invalid_file, "{}.unk_token: \"{}\" is not in the vocab", where, *unk);
    m.unk_id_ = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    auto it = m.vocab_.find(fmt::format("<0x{:02X}>", b));
    if (it != m.vocab_.end()) m.byte_ids_[b] = it->second;
  }
  m.bmp_char_ids_.assign(0x10000, -1);
  for (const auto& [token, id] : m.vocab_) {
    size_t i = 0;
    if (token.empty()) continue;
    const char32_t cp = next_codepoint(token, i);
    if (i == token.size() && cp < 0x10000) m.bmp_char_ids_[cp] = id;
  }

  const json& merges = json_required(model, "merges", where);
  if (!merges.is_array()) throw_error(ErrorCode::invalid_file, "{}.merges: expected an array", where);
  m.merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const json& e = merges[rank];
    std::string a, b;
    if (e.is_string()) {
      const std::string& s = e.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        throw_error(ErrorCode::invalid_file,
                    "{}.merges[{}]: expected \"a b\" (two tokens, one space), got \"{}\"", where, rank, s);
      a = s.substr(0, space);
      b = s.substr(space + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      a = e[0].get<std::string>();
      b = e[1].get<std::string>();
    } else {
      throw_error(ErrorCode::invalid_file, "{}.merges[{}]: expected \"a b\" or [\"a\", \"b\"], got {}", where,
                  rank, json_preview(e));
    }
    auto ia = m.vocab_.find(a), ib = m.vocab_.find(b);
    if (ia == m.vocab_.end() || ib == m.vocab_.end())
      throw_error(ErrorCode::invalid_file, "{}.merges[{}]: token \"{}\" is not in the vocab", where, rank,
                  ia == m.vocab_.end() ? a : b);
    const std::string merged = a + b.substr(std::min(m.prefix_.size(), b.size()));
    auto im = m.vocab_.find(merged);
    if (im == m.vocab_.end())
      throw_error(ErrorCode::invalid_file, "{}.merges[{}]: merged token \"{}\" is not in the vocab", where,
                  rank, merged);
    m.merges_.insert_or_assign(pair_key(ia->second, ib->second),
                               Merge{static_cast<uint32_t>(rank), im->second});
  }
  return m;
}

void BpeModel::clear_cache() const {
  std::lock_guard<std::mutex> lock(cache_->mutex);
  cache_->words.clear();
}

std::optional<TokenId> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_id_[static_cast<size_t>(id)])
    return nullptr;
  return &id_to_token_[static_cast<size_t>(id)];
}

TokenId BpeModel::char_id(std::string_view ch, char32_t cp, bool first, bool last,
                          std::string& scratch) const {
  const bool affixed = (!first && !prefix_.empty()) || (last && !suffix_.empty());
  if (!affixed) {
    if (cp < 0x10000) return bmp_char_ids_[cp];
    auto it = vocab_.find(ch);
    return it == vocab_.end() ? -1 : it->second;
  }
  scratch.clear();
  if (!first) scratch += prefix_;
  scratch += ch;
  if (last) scratch += suffix_;
  auto it = vocab_.find(scratch);
  return it == vocab_.end() ? -1 : it->second;
}

namespace {

struct Symbol {
  TokenId id;
  int32_t prev, next;
  uint32_t len;  // bytes of the piece this symbol covers; 0 once merged into its left neighbour
};

struct HeapEntry {
  uint32_t rank;
  int32_t pos;
  TokenId new_id;
  // std heap functions build a max-heap: the "largest" entry is the lowest rank, then the leftmost position.
  bool operator<(const HeapEntry& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

void BpeModel::merge_piece(std::string_view piece, std::vector<TokenId>& out) const {
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<HeapEntry> heap;
  thread_local std::string scratch;
  symbols.clear();
  heap.clear();

  auto add = [&](TokenId id, uint32_t len) {
    const auto n = static_cast<int32_t>(symbols.size());
    if (n > 0) symbols.back().next = n;
    symbols.push_back({id, n - 1, -1, len});
  };
  TokenId unk = -1;  // pending unk symbol, not yet added so that fuse_unk can grow it
  uint32_t unk_len = 0;
  size_t i = 0;
  while (i < piece.size()) {
    const size_t start = i;
    const char32_t cp = next_codepoint(piece, i);
    const std::string_view ch = piece.substr(start, i - start);
    const auto len = static_cast<uint32_t>(ch.size());
    const TokenId id = char_id(ch, cp, start == 0, i == piece.size(), scratch);
    if (id >= 0) {
      if (unk >= 0) add(unk, unk_len), unk = -1;
      add(id, len);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : ch) all &= byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all) {
        for (char c : ch) add(byte_ids_[static_cast<uint8_t>(c)], 1);
        continue;
      }
    }
    if (unk_id_) {
      if (unk >= 0 && fuse_unk_) {
        unk_len += len;
      } else {
        if (unk >= 0) add(unk, unk_len);
        unk = *unk_id_;
        unk_len = len;
      }
    }
  }
  if (unk >= 0) add(unk, unk_len);

  for (size_t k = 0; k + 1 < symbols.size(); ++k) {
    auto it = merges_.find(pair_key(symbols[k].id, symbols[k + 1].id));
    if (it != merges_.end()) heap.push_back({it->second.rank, static_cast<int32_t>(k), it->second.new_id});
  }
  std::make_heap(heap.begin(), heap.end());
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const HeapEntry top = heap.back();
    heap.pop_back();
    Symbol& cur = symbols[static_cast<size_t>(top.pos)];
    if (cur.len == 0 || cur.next == -1) continue;
    const auto next_pos = static_cast<size_t>(cur.next);
    const Symbol right = symbols[next_pos];
    auto it = merges_.find(pair_key(cur.id, right.id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;  // stale entry
    cur.id = top.new_id;
    cur.len += right.len;
    cur.next = right.next;
    symbols[next_pos].len = 0;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = top.pos;
    if (cur.prev >= 0) {
      auto p = merges_.find(pair_key(symbols[static_cast<size_t>(cur.prev)].id, cur.id));
      if (p != merges_.end()) {
        heap.push_back({p->second.rank, cur.prev, p->second.new_id});
        std::push_heap(heap.begin(), heap.end());
      }
    }
    if (cur.next >= 0) {
      auto n = merges_.find(pair_key(cur.id, symbols[static_cast<size_t>(cur.next)].id));
      if (n != merges_.end()) {
        heap.push_back({n->second.rank, top.pos, n->second.new_id});
        std::push_heap(heap.begin(), heap.end());
      }
    }
  }
  for (const Symbol& s : symbols)
    if (s.len != 0) out.push_back(s.id);
}

void BpeModel::encode(std::string_view piece, std::vector<TokenId>& out) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    auto it = vocab_.find(piece);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = piece.size() < kCacheMaxBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    auto it = cache_->words.find(piece);
    if (it != cache_->words.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = out.size();
  merge_piece(piece, out);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    if (cache_->words.size() < kCacheCapacity)
      cache_->words.emplace(std::string(piece),
                            std::vector<TokenId>(out.begin() + static_cast<ptrdiff_t>(first), out.end()));
  }
}

}  // namespace keel::tokenizer
