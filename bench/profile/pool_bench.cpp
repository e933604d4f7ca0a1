// Round-trip cost of one empty ThreadPool::parallel_for on 2 threads (docs/CPU_PROFILE.md). Not part of the
// build:
//   g++ -O2 -std=c++20 -Isrc bench/profile/pool_bench.cpp build/src/backend/libkeel_backend.a -lpthread \
//       -o /tmp/pool_bench && /tmp/pool_bench
#include <chrono>
#include <cstdio>
#include <functional>

#include "backend/thread_pool.h"
int main() {
  keel::ThreadPool pool(2);
  volatile long sink = 0;
  std::function<void(int64_t, int64_t, int)> fn = [&](int64_t b, int64_t e, int) { sink = sink + (e - b); };
  for (int r = 0; r < 5; ++r) {
    const int n = 20000;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) pool.parallel_for(2, fn);
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
    std::printf("empty parallel_for(2): %.1f us per call\n", us);
  }
}
