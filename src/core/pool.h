// The per-device memory pool. Every tensor allocation keel makes on a device goes through the device's one
// pool, which counts bytes in use, the peak since a mark, and enforces a limit. A refused allocation is a
// value (try_allocate returns an empty Allocation) or an Error(out_of_memory) from allocate(); it never
// aborts. Memory that keel does not allocate but will make resident (mmap'd weights) is counted with
// reserve().
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keel {

// Raw storage for one device: CPU memory, or (later) cudaMalloc. Returns nullptr on failure.
class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  virtual void* allocate(int64_t bytes, int64_t alignment) = 0;
  virtual void release(void* ptr, int64_t bytes) = 0;
};

// 64-byte aligned host memory. Blocks of kDirectMapBytes or more are mapped from the kernel and unmapped when
// released, so the process's RSS follows the pool: from the C heap, freed step buffers stay in glibc's arena
// (its mmap threshold rises to the largest freed block, up to 32 MiB) and fragment it, and the process peak
// drifted above the pool's (+17 MiB over 64 steps of a 32K prompt at the seed model's width). Smaller blocks
// come from the C heap.
//
// keep_bytes > 0 (the CPU compute pool, cli/model_session.cpp): released mapped blocks, newest last, stay
// mapped up to that many bytes in all and serve the next allocation of exactly their size — a step's
// transients repeat layer after layer and step after step, and a fresh mapping costs a page fault per 4 KiB
// touched (half the faults of a 512-token Qwen3-0.6B-shape prefill: 665K → 339K). What is kept is outside the
// pool's count (the pool's in_use and peak are unchanged) and bounded by keep_bytes; the oldest is unmapped
// first, and all of it when the kernel refuses a mapping.
class HostAllocator final : public DeviceAllocator {
 public:
  static constexpr int64_t kDirectMapBytes = int64_t{1} << 20;
  explicit HostAllocator(int64_t keep_bytes = 0) : keep_bytes_(keep_bytes) {}
  ~HostAllocator() override;
  HostAllocator(const HostAllocator&) = delete;
  HostAllocator& operator=(const HostAllocator&) = delete;
  void* allocate(int64_t bytes, int64_t alignment) override;
  void release(void* ptr, int64_t bytes) override;
  int64_t kept_bytes() const;
  int64_t drop_kept();  // unmaps every kept block (also done when a mapping is refused); returns their bytes

 private:
  const int64_t keep_bytes_;
  mutable std::mutex mutex_;                     // the pool calls release outside its own lock
  std::vector<std::pair<void*, int64_t>> kept_;  // (block, bytes), oldest first
  int64_t kept_total_ = 0;
};

class MemoryPool;

// One allocation, owned: returns its bytes to the pool when destroyed. Move-only. Empty when refused.
class Allocation {
 public:
  Allocation() = default;
  Allocation(Allocation&& other) noexcept;
  Allocation& operator=(Allocation&& other) noexcept;
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;
  ~Allocation();

  explicit operator bool() const { return pool_ != nullptr; }
  void* data() const { return data_; }
  int64_t bytes() const { return bytes_; }
  void reset();

 private:
  friend class MemoryPool;
  Allocation(MemoryPool* pool, void* data, int64_t bytes) : pool_(pool), data_(data), bytes_(bytes) {}
  MemoryPool* pool_ = nullptr;
  void* data_ = nullptr;  // nullptr for a reservation (counted bytes without storage)
  int64_t bytes_ = 0;
};

struct PoolStats {
  int64_t in_use = 0;       // bytes handed out now (allocations + reservations)
  int64_t peak = 0;         // highest in_use since the last mark_peak()
  int64_t limit = 0;        // the enforced limit, bytes
  int64_t allocations = 0;  // allocations granted since construction
  int64_t refusals = 0;     // allocations refused (limit or injected failure)
};

class MemoryPool {
 public:
  // `allocator` must outlive the pool; nullptr means a HostAllocator owned by the pool.
  MemoryPool(std::string device_name, int64_t limit_bytes, DeviceAllocator* allocator = nullptr);
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // Allocation of `bytes` (64-byte aligned), or an empty Allocation when the limit (or an injected failure,
  // or the allocator) refuses. `what` names the allocation in logs.
  Allocation try_allocate(int64_t bytes, std::string_view what);
  // As try_allocate, but a refusal throws Error(out_of_memory) naming `what`, the size and the pool's
  // numbers.
  Allocation allocate(int64_t bytes, std::string_view what);
  // Counts `bytes` against the limit without allocating storage (e.g. mmap'd weights that become resident).
  Allocation reserve(int64_t bytes, std::string_view what);

  PoolStats stats() const;
  int64_t in_use() const { return stats().in_use; }
  int64_t peak() const { return stats().peak; }
  int64_t limit() const { return stats().limit; }
  void set_limit(int64_t limit_bytes);
  // Starts a new peak window: peak = in_use.
  void mark_peak();
  // Test switch: the n-th allocation from now (1-based) is refused; 0 turns it off. Reservations count too.
  void fail_nth_allocation(int64_t n);
  const std::string& device_name() const { return device_name_; }

 private:
  friend class Allocation;
  Allocation take(int64_t bytes, std::string_view what, bool storage);
  void give_back(void* data, int64_t bytes);

  std::string device_name_;
  std::unique_ptr<DeviceAllocator> owned_allocator_;
  DeviceAllocator* allocator_;
  mutable std::mutex mutex_;
  PoolStats stats_;
  int64_t fail_countdown_ = 0;  // 0: off; otherwise refuse when it reaches 1
};

}  // namespace keel
