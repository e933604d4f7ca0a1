// The engine: one thread that runs the scheduler's steps, and a thread-safe front for the server. submit()
// checks admission synchronously (so the HTTP layer can answer 400 before any header) and hands the request
// to the loop; everything the request hears comes through its RequestSink, on the engine thread.
#pragma once
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "engine/scheduler.h"

namespace keel {

struct EngineStats {
  SchedulerStats scheduler;
  PoolStats pool;
  std::string device;  // the pool's device: "cpu", "cuda:0"
  int64_t baseline_bytes = 0;
  size_t waiting = 0;
  size_t running = 0;
};

class Engine {
 public:
  Engine(Model& model, MemoryPool& pool, SchedulerConfig config);
  ~Engine();  // cancels what is queued or running, then joins the loop
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Throws Error(context_length_exceeded | invalid_argument) for a request that can never run; else queues
  // it.
  void submit(Request request);
  EngineStats stats() const;
  Model& model() { return model_; }
  const SchedulerConfig& config() const { return config_; }

 private:
  void loop();
  Model& model_;
  MemoryPool& pool_;
  SchedulerConfig config_;
  Scheduler scheduler_;  // touched by the loop thread only (after construction)
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Request> incoming_;
  EngineStats last_stats_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace keel
