#include "core/pool.h"

#include <gtest/gtest.h>

#include "core/error.h"

using namespace keel;

TEST(Pool, CountsInUseAndPeak) {
  MemoryPool pool("cpu", 1000);
  {
    Allocation a = pool.allocate(300, "a");
    Allocation b = pool.allocate(200, "b");
    EXPECT_EQ(pool.in_use(), 500);
    EXPECT_EQ(pool.peak(), 500);
    EXPECT_NE(a.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u);
  }
  EXPECT_EQ(pool.in_use(), 0);
  EXPECT_EQ(pool.peak(), 500);
  pool.mark_peak();
  EXPECT_EQ(pool.peak(), 0);
  Allocation c = pool.allocate(100, "c");
  EXPECT_EQ(pool.peak(), 100);
}

TEST(Pool, EnforcesLimitAsValueAndAsError) {
  MemoryPool pool("cpu", 1000);
  Allocation a = pool.allocate(900, "a");
  Allocation refused = pool.try_allocate(101, "b");
  EXPECT_FALSE(refused);
  EXPECT_EQ(pool.in_use(), 900);
  Allocation fits = pool.try_allocate(100, "c");
  EXPECT_TRUE(fits);
  try {
    pool.allocate(1, "weights of layer 3");
    FAIL() << "expected out_of_memory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::out_of_memory);
    EXPECT_NE(std::string(e.what()).find("weights of layer 3"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("1000"), std::string::npos);
  }
  EXPECT_EQ(pool.stats().refusals, 2);
}

TEST(Pool, FailsTheNthAllocation) {
  MemoryPool pool("cpu", 1 << 20);
  pool.fail_nth_allocation(3);
  Allocation a = pool.try_allocate(10, "1");
  Allocation b = pool.try_allocate(10, "2");
  Allocation c = pool.try_allocate(10, "3");
  Allocation d = pool.try_allocate(10, "4");
  EXPECT_TRUE(a);
  EXPECT_TRUE(b);
  EXPECT_FALSE(c);
  EXPECT_TRUE(d);  // one-shot
  EXPECT_EQ(pool.in_use(), 30);
}

TEST(Pool, ReservationsCountWithoutStorage) {
  MemoryPool pool("cpu", 1000);
  Allocation weights = pool.reserve(800, "mmap'd weights");
  EXPECT_EQ(weights.data(), nullptr);
  EXPECT_EQ(pool.in_use(), 800);
  EXPECT_FALSE(pool.try_allocate(201, "x"));
  weights.reset();
  EXPECT_EQ(pool.in_use(), 0);
}

TEST(Pool, MovesTransferOwnership) {
  MemoryPool pool("cpu", 1000);
  Allocation a = pool.allocate(100, "a");
  Allocation b = std::move(a);
  EXPECT_FALSE(a);
  EXPECT_EQ(pool.in_use(), 100);
  b = pool.allocate(50, "c");  // the old 100 bytes go back
  EXPECT_EQ(pool.in_use(), 50);
}

TEST(Pool, NegativeAndHugeRequestsAreRefused) {
  MemoryPool pool("cpu", 1000);
  EXPECT_FALSE(pool.try_allocate(-1, "neg"));
  EXPECT_FALSE(pool.try_allocate(int64_t{1} << 62, "huge"));
  EXPECT_EQ(pool.in_use(), 0);
}

// A HostAllocator that keeps released mappings: a block of the same size comes back (the same address, its
// contents as left), other sizes are mapped fresh, the total kept never passes keep_bytes (the oldest goes),
// the pool's count is unchanged by what is kept, and drop_kept unmaps all of it.
TEST(Pool, HostAllocatorKeepsReleasedMappingsUpToItsBound) {
  const int64_t MiB = int64_t{1} << 20;
  HostAllocator host(5 * MiB);
  MemoryPool pool("cpu", 100 * MiB, &host);
  void* first = nullptr;
  {
    Allocation a = pool.allocate(2 * MiB, "a");
    first = a.data();
    static_cast<char*>(first)[123] = 42;
  }
  EXPECT_EQ(pool.in_use(), 0);
  EXPECT_EQ(host.kept_bytes(), 2 * MiB);
  {
    Allocation other = pool.allocate(3 * MiB, "other size");  // not the kept block
    EXPECT_NE(other.data(), first);
    Allocation again = pool.allocate(2 * MiB, "same size");
    EXPECT_EQ(again.data(), first);
    EXPECT_EQ(static_cast<char*>(again.data())[123], 42);
    EXPECT_EQ(host.kept_bytes(), 0);
    EXPECT_EQ(pool.in_use(), 5 * MiB);
  }
  EXPECT_EQ(host.kept_bytes(), 5 * MiB);  // both released: 3 + 2 MiB, at the bound
  {
    Allocation big = pool.allocate(4 * MiB, "big");
    big.reset();  // kept: the oldest blocks (2, then 3 MiB) are unmapped to stay within 5 MiB
  }
  EXPECT_LE(host.kept_bytes(), 5 * MiB);
  EXPECT_EQ(host.kept_bytes(), 4 * MiB);
  { Allocation huge = pool.allocate(6 * MiB, "over the bound"); }
  EXPECT_EQ(host.kept_bytes(), 4 * MiB);  // a block larger than the bound is unmapped at once
  EXPECT_EQ(host.drop_kept(), 4 * MiB);
  EXPECT_EQ(host.kept_bytes(), 0);
  EXPECT_EQ(pool.in_use(), 0);
}
