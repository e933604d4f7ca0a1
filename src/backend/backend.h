// The backend interface: a device, its memory pool, a stream, which ops it supports, and one method per op
// kernel. Ops in src/ops/ check shapes once, ask supports(), and hand the backend that owns the tensors a
// plain-data argument struct (backend/kernel_args.h); the backend runs its kernel, takes scratch from its own
// pool and splits the work among its own threads (CPU) or blocks (a device). It also states each op's
// workspace for given sizes, so the planner asks the backend that will run the step. Backends: cpu/ (the
// fast kernels, ISA dispatch), reference/ (the float64 references, the second implementation every test
// build runs), cuda/ later. Every backend is tested by the one harness in tests/ops/.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "backend/kernel_args.h"
#include "core/dtype.h"
#include "core/pool.h"
#include "core/tensor.h"

namespace keel {

enum class DeviceKind { cpu, cuda };

// The op vocabulary (src/ops/). supports() answers per op and the dtype of its weight (u32: packed
// quantized), or of its main input for ops without weights (f32).
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
  convert,
};
std::string_view op_name(Op op);

class ThreadPool;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;  // "cpu (avx512-bf16, 2 threads)"
  // Whether this backend has a kernel for `op` with weights (or input) of `dtype`. Every op asks before it
  // places work here and throws Error(unsupported) naming the op, the backend and the dtype when not.
  virtual bool supports(Op op, DType dtype) const = 0;
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

  // Whether the host reads and writes this backend's tensors in place (CPU, reference); false for a device,
  // whose tensors the host reaches only through upload/download.
  virtual bool host_addressable() const { return false; }
  // Waits for queued work (a no-op on the CPU, whose kernels run synchronously).
  virtual void synchronize() {}
  // Host worker threads the backend owns (the CPU's kernel workers); nullptr when it has none. Host-side
  // work on the backend's tensors (random weight fills) may use them.
  virtual ThreadPool* threads() { return nullptr; }

  // ---- kernels (kernel_args.h). The base versions throw Error(unsupported) naming the op and backend; a
  // backend overrides what it supports(). `*_workspace` return the bytes the kernel takes from pool() for
  // these sizes (pointers in the args are not read), exactly.
  virtual void matmul(const MatmulArgs& a);
  virtual int64_t matmul_workspace(const MatmulArgs& a) const;
  virtual void embedding(const EmbeddingArgs& a);
  virtual void rms_norm(const RmsNormArgs& a);
  virtual void gated_rms_norm(const GatedRmsNormArgs& a);
  virtual void l2_norm(const L2NormArgs& a);
  virtual void activation(const ActivationArgs& a);
  virtual void softmax(const SoftmaxArgs& a);
  virtual void binary(const BinaryArgs& a);
  virtual void rope_cos_sin(const RopeCosSinArgs& a);
  virtual void rope(const RopeArgs& a);
  virtual void causal_conv1d(const Conv1dArgs& a);
  virtual int64_t causal_conv1d_workspace(const Conv1dArgs& a) const;
  virtual void ssd_scan(const SsdScanArgs& a);
  virtual int64_t ssd_scan_workspace(const SsdScanArgs& a) const;
  virtual void gated_deltanet(const GatedDeltaNetArgs& a);
  virtual int64_t gated_deltanet_workspace(const GatedDeltaNetArgs& a) const;
  virtual void convert(const ConvertArgs& a);
  virtual void attention(const AttentionArgs& a);
  virtual int64_t attention_workspace(const AttentionArgs& a) const;
  virtual void moe_route(const MoeRouteArgs& a);
  virtual int64_t moe_route_workspace(const MoeRouteArgs& a) const;
  virtual void moe_group(const MoeGroupArgs& a);
  virtual void grouped_matmul(const GroupedMatmulArgs& a);
  virtual int64_t grouped_matmul_workspace(const GroupedMatmulArgs& a) const;
  virtual void moe_combine(const MoeCombineArgs& a);
  virtual void scale_rows(const ScaleRowsArgs& a);
  virtual void argmax(const ArgmaxArgs& a);
  virtual void sample_rows(const SampleRowsArgs& a);
  virtual int64_t sample_rows_workspace(const SampleRowsArgs& a) const;

 protected:
  [[noreturn]] void no_kernel(std::string_view op) const;
};

}  // namespace keel
