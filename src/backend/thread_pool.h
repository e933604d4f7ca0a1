// One pool of host worker threads (the CPU backend's kernels; host-side fills) (-t/--threads). parallel_for
// splits [0, n) into contiguous ranges, one per worker, and returns when all are done. Kernels must not nest
// parallel_for calls.
//
// Hand-off: a decode step is hundreds of short parallel_for calls a few microseconds apart, so waking a
// sleeping thread through the kernel for each (~15 µs, docs/CPU_PROFILE.md) costs a tenth of a token. A
// worker that has finished spins on the job counter for up to kSpin before it sleeps on the condition
// variable, and the caller spins as long for the workers to finish; the mutex is taken only to sleep, to wake
// a sleeper, and by the last worker of a job.
#pragma once
#include <atomic>
#include <chrono>
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

  // How long a worker (or the caller) polls before it sleeps.
  static constexpr std::chrono::microseconds kSpin{50};

 private:
  void worker_loop(int index);
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int64_t, int64_t, int)>* job_ = nullptr;  // written before generation_ moves
  int64_t job_n_ = 0;
  std::atomic<uint64_t> generation_{0};  // a new job: written under mutex_, read by spinning workers
  std::atomic<int> pending_{0};          // workers still running the current job
  int sleeping_workers_ = 0;             // under mutex_
  bool caller_sleeping_ = false;         // under mutex_
  bool stop_ = false;                    // under mutex_ (and read by spinners through generation_)
  std::mutex call_mutex_;                // one parallel_for at a time
};

}  // namespace keel
