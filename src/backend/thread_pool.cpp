#include "backend/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace keel {

namespace {
void range_of(int64_t n, int parts, int index, int64_t& begin, int64_t& end) {
  int64_t base = n / parts, extra = n % parts;
  begin = index * base + std::min<int64_t>(index, extra);
  end = begin + base + (index < extra ? 1 : 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Polls until ready() or kSpin has passed (the clock read every 64 polls); true when ready.
template <typename Ready>
bool spin_until(Ready&& ready) {
  const auto until = std::chrono::steady_clock::now() + ThreadPool::kSpin;
  for (uint32_t i = 1;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) return ready();
  }
}
}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);  // spinners look, then see stop_ under the lock
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t, int)>* job;
    int64_t n;
    if (!spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
      std::unique_lock lock(mutex_);
      ++sleeping_workers_;
      start_cv_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
      --sleeping_workers_;
    }
    {
      std::lock_guard lock(mutex_);  // job_, job_n_ and stop_ as the generation they came with
      if (stop_) return;
      seen = generation_.load(std::memory_order_relaxed);
      job = job_;
      n = job_n_;
    }
    int64_t begin, end;
    range_of(n, size(), index, begin, end);
    if (begin < end) (*job)(begin, end, index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mutex_);
      if (caller_sleeping_) done_cv_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    fn(0, n, 0);
    return;
  }
  std::lock_guard call_lock(call_mutex_);
  bool wake;
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    wake = sleeping_workers_ > 0;
  }
  if (wake) start_cv_.notify_all();
  int64_t begin, end;
  range_of(n, size(), 0, begin, end);
  if (begin < end) fn(begin, end, 0);
  if (!spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; })) {
    std::unique_lock lock(mutex_);
    caller_sleeping_ = true;
    done_cv_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
    caller_sleeping_ = false;
  }
  std::lock_guard lock(mutex_);
  job_ = nullptr;
}

}  // namespace keel
