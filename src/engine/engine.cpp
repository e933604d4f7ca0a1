#include "engine/engine.h"

#include <spdlog/spdlog.h>

namespace keel {

Engine::Engine(Model& model, MemoryPool& pool, SchedulerConfig config)
    : model_(model), pool_(pool), config_(config), scheduler_(model, pool, config) {
  last_stats_.baseline_bytes = scheduler_.baseline();
  last_stats_.pool = pool_.stats();
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  // Requests still queued hear that they were cancelled; the scheduler's destructor does the same for its
  // own.
  for (auto& r : incoming_)
    if (r.sink) r.sink->on_finish(FinishReason::cancelled, nullptr);
}

void Engine::submit(Request request) {
  scheduler_.check_admission(request);  // const and thread-safe: answers before anything is queued
  {
    std::lock_guard lock(mutex_);
    incoming_.push_back(std::move(request));
  }
  wake_.notify_all();
}

EngineStats Engine::stats() const {
  std::lock_guard lock(mutex_);
  EngineStats s = last_stats_;
  s.pool = pool_.stats();
  s.device = pool_.device_name();
  return s;
}

void Engine::loop() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] {
        return stop_ || !incoming_.empty() || scheduler_.running() > 0 || scheduler_.waiting() > 0;
      });
      if (stop_) return;
      while (!incoming_.empty()) {
        Request r = std::move(incoming_.front());
        incoming_.pop_front();
        auto sink = r.sink;
        try {
          scheduler_.submit(std::move(r));
        } catch (const Error& e) {  // the limit or baseline moved since the caller's check
          if (sink) sink->on_finish(FinishReason::error, &e);
        }
      }
    }
    bool worked = false;
    try {
      worked = scheduler_.step();
    } catch (const std::exception& e) {
      spdlog::error("engine step failed unexpectedly: {}", e.what());
    }
    std::lock_guard lock(mutex_);
    last_stats_.scheduler = scheduler_.stats();
    last_stats_.baseline_bytes = scheduler_.baseline();
    last_stats_.waiting = scheduler_.waiting() + incoming_.size();
    last_stats_.running = scheduler_.running();
    if (!worked && incoming_.empty() && scheduler_.running() == 0 && scheduler_.waiting() == 0) continue;
  }
}

}  // namespace keel
