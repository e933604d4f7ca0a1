// The backend interface: a device, its memory pool, a stream, and which ops it supports. The CPU backend
// lives in backend/cpu/, CUDA (later) in backend/cuda/. Ops in src/ops/ check shapes, state their workspace,
// and call the backend's kernels; every backend is tested by the one harness in tests/ops/.
#pragma once
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/pool.h"

namespace keel {

enum class DeviceKind { cpu, cuda };

// The op vocabulary (src/ops/). supports() answers per op and weight dtype.
enum class Op {
  matmul,
  embedding,
  rms_norm,
  l2_norm,
  rope,
  softmax,
  activation,
  conv1d,
  ssd_scan,
  gated_deltanet,
  attention,
  moe,
  sampling,
};

class ThreadPool;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;  // "cpu (avx512-bf16, 2 threads)"
  virtual bool supports(Op op, DType weight_dtype) const = 0;
  // The device's one pool: every tensor keel allocates on this device comes from it.
  virtual MemoryPool& pool() = 0;
  // Waits for queued work (a no-op on the CPU, whose kernels run synchronously).
  virtual void synchronize() {}
  // CPU workers for kernels; nullptr on devices without host-side parallel kernels.
  virtual ThreadPool* threads() { return nullptr; }
};

}  // namespace keel
