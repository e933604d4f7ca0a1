#include "server/request_memory.h"

#include <malloc.h>

#include <algorithm>

#include "core/error.h"
#include "server/api_error.h"

namespace keel::server {

RequestMemory::Ticket& RequestMemory::Ticket::operator=(Ticket&& o) noexcept {
  if (this != &o) {
    release();
    owner_ = o.owner_;
    bytes_ = o.bytes_;
    o.owner_ = nullptr;
  }
  return *this;
}

void RequestMemory::Ticket::release() {
  if (owner_) owner_->give_back(bytes_);
  owner_ = nullptr;
}

void RequestMemory::Ticket::shrink_to(int64_t bytes) {
  if (!owner_ || bytes >= bytes_) return;
  bytes = std::max<int64_t>(bytes, 0);
  owner_->give_back(bytes_ - bytes);
  bytes_ = bytes;
}

RequestMemory::RequestMemory(int64_t budget_bytes, std::chrono::milliseconds wait)
    : budget_(budget_bytes), wait_(wait) {
  if (budget_bytes <= 0)
    throw Error(ErrorCode::invalid_argument, "the request memory budget must be positive");
}

RequestMemory::Ticket RequestMemory::acquire(int64_t body_bytes) {
  const int64_t need = estimate(std::max<int64_t>(body_bytes, 0));
  if (need > budget_)
    throw ApiError(
        413, "request_too_large",
        fmt::format("the request body ({} bytes) needs {} bytes of request memory to handle, more than "
                    "this server's request budget of {} bytes (the largest body it takes is {} bytes; "
                    "raise --memory-limit)",
                    body_bytes, need, budget_, max_body_for(budget_)));
  std::unique_lock lock(mutex_);
  if (!freed_.wait_for(lock, wait_, [&] { return in_use_ + need <= budget_; }))
    throw ApiError(
        503, "server_busy",
        fmt::format("other requests hold the request memory now ({} of {} bytes; this one needs {}); "
                    "retry shortly",
                    in_use_, budget_, need))
        .with_retry_after(1);
  in_use_ += need;
  peak_ = std::max(peak_, in_use_);
  return Ticket(this, need);
}

int64_t RequestMemory::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

int64_t RequestMemory::peak() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

void RequestMemory::give_back(int64_t bytes) {
  {
    std::lock_guard lock(mutex_);
    in_use_ -= bytes;
  }
  freed_.notify_all();
}

void return_memory_to_os() {
  malloc_trim(0);
}

}  // namespace keel::server
