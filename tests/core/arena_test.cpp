// OffsetArena (src/core/arena.h), the sub-allocator under the device pool. Oracle: a plain list of the live
// ranges kept by the test (no overlap, inside the capacity, aligned) and the arithmetic of what must be free.
#include "core/arena.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <iterator>
#include <map>
#include <random>

#include "core/error.h"

namespace keel {
namespace {

TEST(OffsetArena, RandomAllocationsNeverOverlapAndAllMergeBackWhenFreed) {
  const uint64_t seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const int64_t capacity = 1 << 20;
  OffsetArena arena(capacity);
  std::map<int64_t, int64_t> live;  // offset -> bytes
  int64_t granted = 0, refused = 0;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 100 < 55) {
      const int64_t bytes = 1 + static_cast<int64_t>(rng() % (rng() % 8 == 0 ? 200000 : 5000));
      const int64_t alignment = int64_t{1} << (rng() % 10);
      const auto off = arena.allocate(bytes, alignment);
      if (!off) {
        ++refused;
        // A refusal is right only when no free range could hold it even unaligned-padded.
        ASSERT_LT(arena.largest_free_range(), bytes + alignment - 1) << "step " << step;
        continue;
      }
      ++granted;
      ASSERT_EQ(*off % alignment, 0) << "step " << step;
      ASSERT_GE(*off, 0);
      ASSERT_LE(*off + bytes, capacity);
      auto next = live.lower_bound(*off);
      if (next != live.end()) {
        ASSERT_LE(*off + bytes, next->first) << "overlaps the next live range";
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second, *off) << "overlaps the previous live range";
      }
      live[*off] = bytes;
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      arena.release(it->first, it->second);
      live.erase(it);
    }
    int64_t used = 0;
    for (const auto& [o, b] : live) used += b;
    ASSERT_LE(arena.free_bytes(), capacity - used);
  }
  EXPECT_GT(granted, 5000);
  EXPECT_GT(refused, 0);  // the sequence did fill the arena at times
  for (const auto& [o, b] : live) arena.release(o, b);
  EXPECT_EQ(arena.free_bytes(), capacity);
  EXPECT_EQ(arena.free_ranges(), 1);
  EXPECT_EQ(arena.largest_free_range(), capacity);
}

TEST(OffsetArena, BestFitTakesTheSmallestHoleThatHolds) {
  OffsetArena arena(1000);
  const auto a = arena.allocate(100, 1), b = arena.allocate(50, 1), c = arena.allocate(100, 1),
             d = arena.allocate(30, 1), e = arena.allocate(100, 1);
  ASSERT_TRUE(a && b && c && d && e);
  arena.release(*b, 50);
  arena.release(*d, 30);
  EXPECT_EQ(arena.allocate(30, 1), d);  // the 30-byte hole, not the 50-byte one before it
  EXPECT_EQ(arena.allocate(50, 1), b);
  EXPECT_EQ(arena.allocate(621, 1), std::nullopt);  // 620 left at the end
  EXPECT_TRUE(arena.allocate(620, 1));
  EXPECT_EQ(arena.free_bytes(), 0);
}

TEST(OffsetArena, AlignmentPaddingComesBackWithTheRange) {
  OffsetArena arena(4096);
  const auto a = arena.allocate(3, 1);
  const auto b = arena.allocate(10, 1024);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*b, 1024);
  arena.release(*a, 3);
  arena.release(*b, 10);
  EXPECT_EQ(arena.free_ranges(), 1);
  EXPECT_EQ(arena.free_bytes(), 4096);
  EXPECT_THROW(arena.release(5, 1), Error);
}

}  // namespace
}  // namespace keel
