// ThreadPool: every index of [0, n) is run exactly once per call and its writes are visible when parallel_for
// returns, whether the workers were still spinning from the previous call (calls back to back, as in a decode
// step) or had gone to sleep (calls further apart than ThreadPool::kSpin); the pool stops cleanly from both
// states. The oracle is the plain sequential loop.
#include "backend/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

using namespace keel;

namespace {

// One call over n indices: each index writes i·i + call into its own slot (plain, non-atomic stores: the pool
// must publish them); the caller then checks every slot and that the worker indices stayed below size().
void check_call(ThreadPool& pool, int64_t n, int64_t call) {
  std::vector<int64_t> out(static_cast<size_t>(n), -1);
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::atomic<bool> bad_worker{false};
  pool.parallel_for(n, [&](int64_t begin, int64_t end, int worker) {
    if (worker < 0 || worker >= pool.size()) bad_worker = true;
    for (int64_t i = begin; i < end; ++i) {
      out[static_cast<size_t>(i)] = i * i + call;
      hits[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
    }
  });
  ASSERT_FALSE(bad_worker);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "index " << i << " of " << n << ", call " << call;
    ASSERT_EQ(out[static_cast<size_t>(i)], i * i + call) << "index " << i << " of " << n << ", call " << call;
  }
}

TEST(ThreadPool, EveryIndexOnceBackToBackAndAfterSleeping) {
  std::mt19937 rng(7);
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    ASSERT_EQ(pool.size(), threads);
    for (int64_t call = 0; call < 3000; ++call) {
      const int64_t n = 1 + static_cast<int64_t>(rng() % 97);
      check_call(pool, n, call);
      // now and then wait past the spin, so the next call wakes sleeping workers
      if (call % 250 == 0) std::this_thread::sleep_for(3 * ThreadPool::kSpin);
    }
  }
}

// The split depends only on n and size(): contiguous ranges in worker order, the first n % size() one longer.
TEST(ThreadPool, SplitIsTheDocumentedOne) {
  ThreadPool pool(3);
  for (int64_t n : {2, 3, 7, 100}) {
    std::vector<std::pair<int64_t, int64_t>> ranges(3, {-1, -1});
    pool.parallel_for(n, [&](int64_t b, int64_t e, int w) { ranges[static_cast<size_t>(w)] = {b, e}; });
    int64_t begin = 0;
    for (int w = 0; w < 3; ++w) {
      const int64_t len = n / 3 + (w < n % 3 ? 1 : 0);
      if (len == 0) continue;  // a worker with an empty range is not called
      EXPECT_EQ(ranges[static_cast<size_t>(w)], std::make_pair(begin, begin + len))
          << "n " << n << " w " << w;
      begin += len;
    }
    EXPECT_EQ(begin, n);
  }
}

// Destruction while the workers spin (right after a call) and while they sleep (long after one) returns.
TEST(ThreadPool, StopsWhileSpinningAndWhileSleeping) {
  for (int round = 0; round < 50; ++round) {
    ThreadPool spinning(3);
    check_call(spinning, 10, round);
  }
  for (int round = 0; round < 5; ++round) {
    ThreadPool sleeping(3);
    check_call(sleeping, 10, round);
    std::this_thread::sleep_for(4 * ThreadPool::kSpin);
  }
}

}  // namespace
