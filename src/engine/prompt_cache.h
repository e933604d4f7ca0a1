// The prompt cache: sequence states kept after their requests end, reused by a later sequence whose tokens
// start with theirs — cut back to the shared prefix, or (models whose states cannot be cut back anywhere) to
// the state's last checkpoint inside it. Its states live in the model's pool and count in the scheduler's
// idle baseline; the scheduler evicts them first when memory is short. Not thread-safe: the scheduler's
// thread only.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "models/model.h"

namespace keel {

class PromptCache {
 public:
  // `max_entries`: states kept at most (the least recently inserted goes first); 0: the cache is off.
  PromptCache(Model& model, int max_entries) : model_(model), max_entries_(max_entries) {}

  // The cached state that holds the longest prefix of `tokens` (at most tokens.size() − 1 of them: one token
  // must still be fed), cut back to that prefix and with room for `capacity` tokens; it leaves the cache.
  // null when no entry shares a usable prefix, or when one does but a copy with more room does not fit now
  // (the entry stays, cut back).
  std::unique_ptr<SequenceState> take(std::span<const int32_t> tokens, int64_t capacity);
  // Keeps `state`, which holds `tokens`; replaces an entry with the same tokens, then evicts down to
  // max_entries.
  void insert(std::vector<int32_t> tokens, std::unique_ptr<SequenceState> state);
  // Drops the least recently inserted entry; the pool bytes freed (0 when empty).
  int64_t evict_one();
  void clear() { entries_.clear(); }

  bool empty() const { return entries_.empty(); }
  int64_t entries() const { return static_cast<int64_t>(entries_.size()); }
  int64_t bytes() const;  // pool bytes its states hold now
  int64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    std::vector<int32_t> tokens;  // what the state holds
    std::unique_ptr<SequenceState> state;
    uint64_t last_used = 0;
  };
  Model& model_;
  int max_entries_;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
  int64_t evictions_ = 0;
};

}  // namespace keel
