// The CUDA runtime as keel uses it: which devices there are, their memory, errors as keel Errors, and the
// device allocator under a device's MemoryPool. Compiled only with KEEL_CUDA (nvcc found); callers outside
// backend/cuda see it through the Backend interface.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/arena.h"
#include "core/pool.h"

namespace keel::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;          // "NVIDIA H200"
  int major = 0, minor = 0;  // compute capability
  int64_t total_bytes = 0;   // device memory
  int64_t free_bytes = 0;    // what cudaMemGetInfo says is free now
};

// Number of CUDA devices; 0 when there is none or no driver (`why`, when given, says which).
int device_count(std::string* why = nullptr);
// The device at `index`, or Error(invalid_argument) naming what exists ("cuda:3: this machine has 1 CUDA
// device (cuda:0)" / "no CUDA device: …").
DeviceInfo device_info(int index);
// What cudaMemGetInfo says is free on device `index` now (bytes); cheaper than device_info.
int64_t free_bytes(int index);
// Throws Error(internal) "CUDA error in <what>: <name> (<description>)" when `status` (a cudaError_t) is not
// success; also clears a non-sticky error so it cannot poison a later call. A sticky one (an illegal address,
// a kernel trap) cannot be cleared: the message says so and context_lost() turns true.
void check(int status, const char* what);

// Whether a sticky error has made this process's CUDA context unusable (every later call fails; the runtime
// gives no second context to this process). keel serve watches it and restarts itself.
bool context_lost();

// Test hook: a kernel on `stream` that writes through an invalid address, making the context's error sticky
// (KEEL_CUDA_FAULT_AT_SYNC, backend/cuda/cuda_backend.h).
void launch_fault(void* stream);

// One cudaMalloc of `capacity_bytes` on device `index`, taken at construction (so later allocations never
// synchronize the device) and cut up by an OffsetArena; allocate() returns nullptr when no free range fits,
// which the pool turns into a refusal. Never managed memory.
class ArenaAllocator final : public DeviceAllocator {
 public:
  ArenaAllocator(int index, int64_t capacity_bytes);
  ~ArenaAllocator() override;
  ArenaAllocator(const ArenaAllocator&) = delete;
  ArenaAllocator& operator=(const ArenaAllocator&) = delete;
  void* allocate(int64_t bytes, int64_t alignment) override;
  void release(void* ptr, int64_t bytes) override;
  int device() const { return index_; }
  const OffsetArena& arena() const { return arena_; }

 private:
  int index_;
  char* base_ = nullptr;
  OffsetArena arena_;
};

// Fills n f32 elements at device pointer `dst` with `value` on the default stream (a kernel: cudaMemset sets
// bytes only), then waits for it.
void fill_f32(float* dst, int64_t n, float value);

}  // namespace keel::cuda
