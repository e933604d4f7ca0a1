// The request budget: memory a request takes before the engine sees it — the body, its parsed JSON, the
// template context and its rendering, the token ids — is counted here before the work, against a fixed budget
// carved out of --memory-limit (the engine's pool gets the rest), so the process stays within the limit
// whatever the requests. A request whose estimate exceeds the whole budget is refused at once (413); one that
// fits the budget but not what is free now waits briefly, then gets a retryable 503.
//
// The estimate is linear in the body size: kBytesPerBodyByte × body + kFixedBytes, an upper bound measured on
// the shapes that expand most (many small JSON values, many messages, one large string; see docs/MEMORY.md
// "Request memory"). Thread-safe; a Ticket returns its bytes when destroyed.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace keel::server {

class RequestMemory {
 public:
  static constexpr int64_t kBytesPerBodyByte = 96;
  static constexpr int64_t kFixedBytes = int64_t{1} << 20;
  static int64_t estimate(int64_t body_bytes) { return kBytesPerBodyByte * body_bytes + kFixedBytes; }
  // The largest body whose estimate fits a budget of `budget_bytes`.
  static int64_t max_body_for(int64_t budget_bytes) {
    return budget_bytes <= kFixedBytes ? 0 : (budget_bytes - kFixedBytes) / kBytesPerBodyByte;
  }

  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& o) noexcept : owner_(o.owner_), bytes_(o.bytes_) { o.owner_ = nullptr; }
    Ticket& operator=(Ticket&& o) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { release(); }
    void release();  // gives the bytes back now (idempotent)
    // Keeps only `bytes` (≤ bytes()) of the hold and gives the rest back.
    void shrink_to(int64_t bytes);
    int64_t bytes() const { return owner_ ? bytes_ : 0; }

   private:
    friend class RequestMemory;
    Ticket(RequestMemory* owner, int64_t bytes) : owner_(owner), bytes_(bytes) {}
    RequestMemory* owner_ = nullptr;
    int64_t bytes_ = 0;
  };

  // budget_bytes > 0; `wait` is how long an acquire that fits the budget may wait for others to finish.
  explicit RequestMemory(int64_t budget_bytes,
                         std::chrono::milliseconds wait = std::chrono::milliseconds(2000));

  // A ticket for a body of `body_bytes`; throws ApiError 413 (request_too_large) when its estimate exceeds
  // the whole budget, 503 (server_busy, Retry-After 1) when it does not come free within the wait.
  Ticket acquire(int64_t body_bytes);

  int64_t budget() const { return budget_; }
  int64_t in_use() const;
  int64_t peak() const;  // the most in use at once since construction

 private:
  void give_back(int64_t bytes);

  const int64_t budget_;
  const std::chrono::milliseconds wait_;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  int64_t in_use_ = 0, peak_ = 0;
};

// Returns freed heap memory to the OS (glibc keeps it otherwise); called after a request whose body was
// large.
void return_memory_to_os();

}  // namespace keel::server
