#include "core/pool.h"

#include <sys/mman.h>

#include <cstdlib>
#include <utility>

#include "core/error.h"

namespace keel {

HostAllocator::~HostAllocator() {
  drop_kept();
}

void* HostAllocator::allocate(int64_t bytes, int64_t alignment) {
  if (bytes >= kDirectMapBytes) {  // page aligned, so any alignment up to 4096
    if (keep_bytes_ > 0) {
      std::lock_guard lock(mutex_);
      for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {
        if (it->second != bytes) continue;
        void* p = it->first;
        kept_.erase(std::next(it).base());
        kept_total_ -= bytes;
        return p;
      }
    }
    auto map = [&] {
      void* p = ::mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      return p == MAP_FAILED ? nullptr : p;
    };
    void* p = map();
    if (!p && drop_kept() > 0) p = map();  // what is kept never causes a refusal
    return p;
  }
  if (bytes <= 0) bytes = alignment;
  int64_t rounded = (bytes + alignment - 1) / alignment * alignment;
  return std::aligned_alloc(static_cast<size_t>(alignment), static_cast<size_t>(rounded));
}

void HostAllocator::release(void* ptr, int64_t bytes) {
  if (bytes < kDirectMapBytes) {
    std::free(ptr);
    return;
  }
  if (bytes <= keep_bytes_) {
    std::lock_guard lock(mutex_);
    kept_.emplace_back(ptr, bytes);
    kept_total_ += bytes;
    while (kept_total_ > keep_bytes_) {
      ::munmap(kept_.front().first, static_cast<size_t>(kept_.front().second));
      kept_total_ -= kept_.front().second;
      kept_.erase(kept_.begin());
    }
    return;
  }
  ::munmap(ptr, static_cast<size_t>(bytes));
}

int64_t HostAllocator::drop_kept() {
  std::lock_guard lock(mutex_);
  const int64_t dropped = kept_total_;
  for (auto& [p, n] : kept_) ::munmap(p, static_cast<size_t>(n));
  kept_.clear();
  kept_total_ = 0;
  return dropped;
}

int64_t HostAllocator::kept_bytes() const {
  std::lock_guard lock(mutex_);
  return kept_total_;
}

Allocation::Allocation(Allocation&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

Allocation& Allocation::operator=(Allocation&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::exchange(other.pool_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Allocation::~Allocation() {
  reset();
}

void Allocation::reset() {
  if (pool_) pool_->give_back(data_, bytes_);
  pool_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

MemoryPool::MemoryPool(std::string device_name, int64_t limit_bytes, DeviceAllocator* allocator)
    : device_name_(std::move(device_name)) {
  if (!allocator) {
    owned_allocator_ = std::make_unique<HostAllocator>();
    allocator = owned_allocator_.get();
  }
  allocator_ = allocator;
  stats_.limit = limit_bytes;
}

MemoryPool::~MemoryPool() = default;

Allocation MemoryPool::take(int64_t bytes, std::string_view, bool storage) {
  if (bytes < 0) return {};
  std::lock_guard lock(mutex_);
  if (fail_countdown_ > 0 && --fail_countdown_ == 0) {
    ++stats_.refusals;
    return {};
  }
  if (bytes > stats_.limit - stats_.in_use) {
    ++stats_.refusals;
    return {};
  }
  void* data = nullptr;
  if (storage) {
    data = allocator_->allocate(bytes, 64);
    if (!data) {
      ++stats_.refusals;
      return {};
    }
  }
  stats_.in_use += bytes;
  if (stats_.in_use > stats_.peak) stats_.peak = stats_.in_use;
  ++stats_.allocations;
  return Allocation(this, data, bytes);
}

Allocation MemoryPool::try_allocate(int64_t bytes, std::string_view what) {
  return take(bytes, what, true);
}

Allocation MemoryPool::allocate(int64_t bytes, std::string_view what) {
  Allocation a = take(bytes, what, true);
  if (!a) {
    PoolStats s = stats();
    throw_error(ErrorCode::out_of_memory,
                "{}: cannot allocate {} bytes for {} ({} bytes in use of a {}-byte limit)", device_name_,
                bytes, what, s.in_use, s.limit);
  }
  return a;
}

Allocation MemoryPool::reserve(int64_t bytes, std::string_view what) {
  Allocation a = take(bytes, what, false);
  if (!a) {
    PoolStats s = stats();
    throw_error(ErrorCode::out_of_memory,
                "{}: cannot reserve {} bytes for {} ({} bytes in use of a {}-byte limit)", device_name_,
                bytes, what, s.in_use, s.limit);
  }
  return a;
}

void MemoryPool::give_back(void* data, int64_t bytes) {
  if (data) allocator_->release(data, bytes);
  std::lock_guard lock(mutex_);
  stats_.in_use -= bytes;
}

PoolStats MemoryPool::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void MemoryPool::set_limit(int64_t limit_bytes) {
  std::lock_guard lock(mutex_);
  stats_.limit = limit_bytes;
}

void MemoryPool::mark_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak = stats_.in_use;
}

void MemoryPool::fail_nth_allocation(int64_t n) {
  std::lock_guard lock(mutex_);
  fail_countdown_ = n < 0 ? 0 : n;
}

}  // namespace keel
