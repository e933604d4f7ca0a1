// One pool of host worker threads (the CPU backend's kernels; host-side fills) (-t/--threads). parallel_for
// splits [0, n) into contiguous ranges, one per worker, and returns when all are done. Kernels must not nest
// parallel_for calls.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace keel {

class ThreadPool {
 public:
  // n_threads <= 0: all cores (std::thread::hardware_concurrency).
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }  // the caller works too
  // fn(begin, end, worker_index) over disjoint ranges covering [0, n). worker_index < size(). fn must not
  // throw: kernels report errors before or after their parallel part. The split depends only on n and size(),
  // never on timing, so results are reproducible.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)>& fn);

 private:
  void worker_loop(int index);
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int64_t, int64_t, int)>* job_ = nullptr;
  int64_t job_n_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::mutex call_mutex_;  // one parallel_for at a time
};

}  // namespace keel
