#include "core/arena.h"

#include <algorithm>
#include <iterator>

#include "core/error.h"

namespace keel {

OffsetArena::OffsetArena(int64_t capacity_bytes) : capacity_(capacity_bytes) {
  if (capacity_bytes < 0)
    throw_error(ErrorCode::invalid_argument, "arena: negative capacity {}", capacity_bytes);
  if (capacity_bytes > 0) free_[0] = capacity_bytes;
}

std::optional<int64_t> OffsetArena::allocate(int64_t bytes, int64_t alignment) {
  if (bytes <= 0 || alignment <= 0 || (alignment & (alignment - 1)) != 0)
    throw_error(ErrorCode::invalid_argument, "arena: cannot allocate {} bytes at alignment {}", bytes,
                alignment);
  std::lock_guard lock(mutex_);
  auto best = free_.end();
  int64_t best_waste = 0;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const int64_t start = it->first, size = it->second;
    const int64_t aligned = (start + alignment - 1) & ~(alignment - 1);
    const int64_t need = aligned - start + bytes;
    if (need > size) continue;
    const int64_t waste = size - need;
    if (best == free_.end() || waste < best_waste) {
      best = it;
      best_waste = waste;
    }
  }
  if (best == free_.end()) return std::nullopt;
  const int64_t start = best->first, size = best->second;
  const int64_t aligned = (start + alignment - 1) & ~(alignment - 1);
  const int64_t end = aligned + bytes;
  free_.erase(best);
  if (end < start + size) free_[end] = start + size - end;
  taken_[aligned] = start;
  return aligned;
}

void OffsetArena::release(int64_t offset, int64_t bytes) {
  std::lock_guard lock(mutex_);
  auto t = taken_.find(offset);
  if (t == taken_.end())
    throw_error(ErrorCode::internal, "arena: release of offset {} that was not handed out", offset);
  int64_t start = t->second;
  int64_t end = offset + bytes;
  taken_.erase(t);
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == end) {
    end += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      free_.erase(prev);
    }
  }
  free_[start] = end - start;
}

int64_t OffsetArena::free_bytes() const {
  std::lock_guard lock(mutex_);
  int64_t n = 0;
  for (const auto& [o, s] : free_) n += s;
  return n;
}

int64_t OffsetArena::largest_free_range() const {
  std::lock_guard lock(mutex_);
  int64_t n = 0;
  for (const auto& [o, s] : free_) n = std::max(n, s);
  return n;
}

int64_t OffsetArena::free_ranges() const {
  std::lock_guard lock(mutex_);
  return static_cast<int64_t>(free_.size());
}

}  // namespace keel
