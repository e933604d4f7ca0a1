#include "engine/prompt_cache.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/error.h"

namespace keel {

std::unique_ptr<SequenceState> PromptCache::take(std::span<const int32_t> tokens, int64_t capacity) {
  if (entries_.empty()) return nullptr;
  const int64_t usable = static_cast<int64_t>(tokens.size()) - 1;  // at least one token must be fed
  size_t best = entries_.size();
  int64_t best_len = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    int64_t n = std::min<int64_t>(static_cast<int64_t>(e.tokens.size()), usable), k = 0;
    while (k < n && e.tokens[static_cast<size_t>(k)] == tokens[static_cast<size_t>(k)]) ++k;
    k = model_.truncation_point(*e.state, k);  // all of it, or back to a checkpoint (recurrent layers)
    if (k <= best_len) continue;
    best = i;
    best_len = k;
  }
  if (best == entries_.size()) return nullptr;
  Entry& e = entries_[best];
  if (best_len < e.state->tokens()) {
    if (!model_.truncate_state(*e.state, best_len)) return nullptr;
    e.tokens.resize(static_cast<size_t>(best_len));  // what the entry now holds
  }
  if (e.state->capacity() < capacity) {  // made for a shorter request: a copy with room for this one
    std::unique_ptr<SequenceState> grown;
    try {
      grown = model_.copy_state(*e.state, capacity);
    } catch (const Error& err) {
      if (err.code() != ErrorCode::out_of_memory) {  // a state the model cannot copy: drop it, start cold
        spdlog::error("prompt cache: copying a cached state failed ({}); the entry is dropped", err.what());
        entries_.erase(entries_.begin() + static_cast<long>(best));
        ++evictions_;
        return nullptr;
      }
    }
    if (!grown) return nullptr;  // no room now: this request starts cold, the entry stays
    e.state = std::move(grown);
  }
  std::unique_ptr<SequenceState> state = std::move(e.state);
  entries_.erase(entries_.begin() + static_cast<long>(best));
  return state;
}

void PromptCache::insert(std::vector<int32_t> tokens, std::unique_ptr<SequenceState> state) {
  if (tokens.empty() || !state) return;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].tokens == tokens) {
      entries_.erase(entries_.begin() + static_cast<long>(i));
      break;
    }
  }
  entries_.push_back(Entry{std::move(tokens), std::move(state), ++clock_});
  while (static_cast<int>(entries_.size()) > max_entries_) evict_one();
}

int64_t PromptCache::evict_one() {
  if (entries_.empty()) return 0;
  auto lru = std::min_element(entries_.begin(), entries_.end(),
                              [](const Entry& a, const Entry& b) { return a.last_used < b.last_used; });
  int64_t freed = lru->state->bytes();
  entries_.erase(lru);
  ++evictions_;
  return freed;
}

int64_t PromptCache::bytes() const {
  int64_t bytes = 0;
  for (const Entry& e : entries_) bytes += e.state->bytes();
  return bytes;
}

}  // namespace keel
