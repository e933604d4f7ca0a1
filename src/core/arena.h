// Sub-allocation of one fixed range of bytes: the device pool takes one large block from the device once
// (cudaMalloc is slow and synchronizing) and hands out pieces of it. Offsets, not pointers, so the logic is
// the same for any device and is tested on the host. Best fit among the free ranges (ties to the lowest
// offset), a freed range merges with free neighbours; every range starts at a multiple of its alignment.
// Thread-safe.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace keel {

class OffsetArena {
 public:
  explicit OffsetArena(int64_t capacity_bytes);
  // Offset of `bytes` (> 0) at a multiple of `alignment` (a power of two), or nullopt when no free range
  // holds them.
  std::optional<int64_t> allocate(int64_t bytes, int64_t alignment);
  // Gives back a range allocate() returned, with the same size.
  void release(int64_t offset, int64_t bytes);
  int64_t capacity() const { return capacity_; }
  int64_t free_bytes() const;
  int64_t largest_free_range() const;
  int64_t free_ranges() const;

 private:
  int64_t capacity_;
  mutable std::mutex mutex_;
  std::map<int64_t, int64_t> free_;  // offset -> size of each free range, disjoint, never adjacent
  // offset handed out -> the start of the range taken for it (alignment padding in front is part of it)
  std::map<int64_t, int64_t> taken_;
};

}  // namespace keel
