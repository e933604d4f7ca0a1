// The CUDA backend: one device, its pool (one cudaMalloc cut up by an OffsetArena), one stream, cuBLAS. Every
// kernel is queued on the backend's stream in order with the copies; nothing waits for the device except
// download() and synchronize() (the step boundary), where a CUDA error from an earlier kernel surfaces as an
// Error naming it. Pointers in the kernel arguments are device addresses of this backend's pool (weights
// included: they are uploaded at load); host memory is named where an argument is on the host (RoPE's
// inv_freq). One file per kernel family (backend/cuda/<family>.cu), each beside the CPU kernel and the
// float64 reference (src/ops/reference/) it is tested against.
//
// Precision (docs/CUDA.md): activations f32 as on the CPU; recurrent states f32; every reduction in f32
// or wider; matmul with bf16 weights multiplies x split into three bf16 parts (hi + mid + lo: x's 24
// significant bits) on the tensor cores with f32 accumulation.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/cuda/cuda_device.h"
#include "core/pool.h"

struct CUstream_st;    // cudaStream_t is CUstream_st*
struct cublasContext;  // cublasHandle_t is cublasContext*

namespace keel {

class CudaBackend final : public Backend {
 public:
  // Device `index` (cuda_device.h's device_info checks it); `pool` is that device's pool, whose allocator is
  // a cuda::ArenaAllocator on the same device (both owned by the caller, outliving the backend).
  CudaBackend(MemoryPool& pool, int index);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  DeviceKind kind() const override { return DeviceKind::cuda; }
  std::string name() const override;  // "cuda:0 (NVIDIA H200, sm_90)"
  bool supports(Op op, DType dtype) const override;
  MemoryPool& pool() override { return pool_; }
  int device() const { return index_; }

  // Memory: cudaMemcpyAsync / cudaMemsetAsync on the stream (host buffers are pageable: upload returns once
  // the runtime has staged them; download waits for the stream).
  void copy(const Tensor& src, Tensor& dst) override;
  void upload(const void* host, int64_t bytes, Tensor& dst) override;
  void download(const Tensor& src, void* host, int64_t bytes) override;
  void fill_zero(Tensor& dst) override;
  // Waits for the stream; an error from any kernel queued since the last call is thrown here as
  // Error(internal) naming it (cuda::check), after which the context is usable again unless the error was a
  // sticky one (then the message says so: every later call fails the same way until keel restarts).
  void synchronize() override;

  // ---- kernels: one family per file (backend/cuda/<family>.cu). Each method first calls enter() (the
  // calling thread's current device), launches on stream(), checks the launch (cuda::check on
  // cudaGetLastError) and returns without waiting. Scratch comes from pool() as Tensor::empty(pool(), …);
  // freeing it before the kernel has run is safe because every later user of those bytes is queued on the
  // same stream.
  void matmul(const MatmulArgs& a) override;  // matmul.cu
  int64_t matmul_workspace(const MatmulArgs& a) const override;
  void embedding(const EmbeddingArgs& a) override;          // embedding.cu
  void rms_norm(const RmsNormArgs& a) override;             // norm.cu
  void gated_rms_norm(const GatedRmsNormArgs& a) override;  // norm.cu
  void l2_norm(const L2NormArgs& a) override;               // norm.cu
  void activation(const ActivationArgs& a) override;        // activation.cu
  void softmax(const SoftmaxArgs& a) override;              // activation.cu
  void binary(const BinaryArgs& a) override;                // activation.cu
  void rope_cos_sin(const RopeCosSinArgs& a) override;      // rope.cu
  void rope(const RopeArgs& a) override;                    // rope.cu
  void causal_conv1d(const Conv1dArgs& a) override;         // conv1d.cu
  int64_t causal_conv1d_workspace(const Conv1dArgs& a) const override;
  void ssd_scan(const SsdScanArgs& a) override;  // ssd_scan.cu
  int64_t ssd_scan_workspace(const SsdScanArgs& a) const override;
  void gated_deltanet(const GatedDeltaNetArgs& a) override;  // gated_deltanet.cu
  int64_t gated_deltanet_workspace(const GatedDeltaNetArgs& a) const override;
  void attention(const AttentionArgs& a) override;  // attention.cu (an f32 or f16 KV cache)
  void convert(const ConvertArgs& a) override;      // attention.cu (the KV cache's rows)
  int64_t attention_workspace(const AttentionArgs& a) const override;
  void moe_route(const MoeRouteArgs& a) override;  // moe.cu
  int64_t moe_route_workspace(const MoeRouteArgs& a) const override;
  void moe_group(const MoeGroupArgs& a) override;            // moe.cu
  void grouped_matmul(const GroupedMatmulArgs& a) override;  // matmul.cu
  int64_t grouped_matmul_workspace(const GroupedMatmulArgs& a) const override;
  void moe_combine(const MoeCombineArgs& a) override;  // moe.cu
  void scale_rows(const ScaleRowsArgs& a) override;    // moe.cu
  void argmax(const ArgmaxArgs& a) override;           // sampling.cu
  void sample_rows(const SampleRowsArgs& a) override;  // sampling.cu
  int64_t sample_rows_workspace(const SampleRowsArgs& a) const override;

  CUstream_st* stream() const { return stream_; }
  cublasContext* cublas() const { return cublas_; }
  // Makes this backend's device the calling thread's current one (the scheduler's thread is not the one
  // that built the backend).
  void enter() const;

 private:
  MemoryPool& pool_;
  int index_;
  cuda::DeviceInfo info_;
  CUstream_st* stream_ = nullptr;
  cublasContext* cublas_ = nullptr;
  bool blocking_ = false;  // CUDA_LAUNCH_BLOCKING=1: copies and fills wait for the device too (tests)
  // KEEL_CUDA_FAULT_AT_SYNC=N (tests of the sticky-error restart): the process's N-th synchronize() (the
  // end of its N-th step) first launches a kernel that faults (cuda::launch_fault); keel serve's restart
  // leaves the variable out of the new process's environment, so it faults once. 0: never.
  int64_t fault_at_sync_ = 0;
  Allocation
      cublas_workspace_;  // cuBLAS's scratch, from the pool (cublasSetWorkspace), not its own cudaMalloc
};

}  // namespace keel
