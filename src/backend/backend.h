// The backend interface: a device, its memory pool, a stream, and which ops it supports. The CPU backend
// lives in backend/cpu/, CUDA (later) in backend/cuda/. Ops in src/ops/ check shapes, state their workspace,
// and call the backend's kernels; every backend is tested by the one harness in tests/ops/.
#pragma once
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/pool.h"
#include "core/tensor.h"

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
  // Memory: copies and fills of tensors that live on this device (from its pool, or borrowed device memory),
  // queued on the backend's one stream in order with its kernels; synchronize() waits for them. Every tensor
  // passed is contiguous (a row range of a larger tensor is: slice dimension 0). Byte counts are checked:
  // Error(invalid_argument) when they differ or a tensor is not contiguous. Models and the engine touch pool
  // tensors only through these and the ops, never with host memcpy/memset, so any device can hold them.
  //
  // src's bytes into dst, within the device (the same byte count; dtypes and shapes may differ).
  virtual void copy(const Tensor& src, Tensor& dst) = 0;
  // `bytes` host bytes into dst (dst.nbytes() == bytes). The host buffer may be reused once this returns.
  virtual void upload(const void* host, int64_t bytes, Tensor& dst) = 0;
  // src's bytes (src.nbytes() == bytes) to host memory; returns once they are there (it waits for the
  // stream's earlier work).
  virtual void download(const Tensor& src, void* host, int64_t bytes) = 0;
  // dst's bytes all zero (0.0 in every float dtype).
  virtual void fill_zero(Tensor& dst) = 0;

  // Waits for queued work (a no-op on the CPU, whose kernels run synchronously).
  virtual void synchronize() {}
  // CPU workers for kernels; nullptr on devices without host-side parallel kernels.
  virtual ThreadPool* threads() { return nullptr; }
};

}  // namespace keel
