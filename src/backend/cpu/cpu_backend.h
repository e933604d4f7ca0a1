// The CPU backend: the host pool, one thread pool, and the instruction set the kernels dispatch on at run
// time.
#pragma once
#include <memory>

#include "backend/backend.h"
#include "backend/cpu/thread_pool.h"

namespace keel {

enum class CpuIsa { generic, avx2, avx512, avx512_bf16 };
// The best instruction set this CPU has (cached). KEEL_CPU_ISA=generic|avx2|avx512|avx512_bf16 caps it
// (tests).
CpuIsa cpu_isa();
const char* cpu_isa_name(CpuIsa isa);

class CpuBackend final : public Backend {
 public:
  // `pool` is the host pool (owned by the caller, outlives the backend). n_threads <= 0: all cores.
  // `isa` picks the kernels (tests run each path); it is capped at cpu_isa().
  CpuBackend(MemoryPool& pool, int n_threads, CpuIsa isa = cpu_isa());
  DeviceKind kind() const override { return DeviceKind::cpu; }
  std::string name() const override;
  bool supports(Op op, DType weight_dtype) const override;
  // Memory (host memory: synchronous memcpy/memset).
  void copy(const Tensor& src, Tensor& dst) override;
  void upload(const void* host, int64_t bytes, Tensor& dst) override;
  void download(const Tensor& src, void* host, int64_t bytes) override;
  void fill_zero(Tensor& dst) override;
  MemoryPool& pool() override { return pool_; }
  ThreadPool* threads() override { return &threads_; }
  CpuIsa isa() const { return isa_; }

 private:
  MemoryPool& pool_;
  CpuIsa isa_;
  ThreadPool threads_;
};

}  // namespace keel
