#include "backend/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <string_view>

#include "backend/cuda/cublas_api.h"
#include "backend/host_memory.h"
#include "core/error.h"

namespace keel {

using cuda::check_cublas;

CudaBackend::CudaBackend(MemoryPool& pool, int index)
    : pool_(pool), index_(index), info_(cuda::device_info(index)) {
  const char* blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
  blocking_ = blocking && std::string_view(blocking) == "1";
  // (keel serve's restart leaves the variable out of the new process's environment: it faults once)
  if (const char* fault = std::getenv("KEEL_CUDA_FAULT_AT_SYNC")) fault_at_sync_ = std::atoll(fault);
  enter();
  cudaStream_t s = nullptr;
  cuda::check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  stream_ = s;
  try {  // a constructor that throws runs no destructor: release what was made so far
    cublasHandle_t h = nullptr;
    check_cublas(cuda::cublas().create(&h), "cublasCreate");
    cublas_ = h;
    check_cublas(cuda::cublas().set_stream(h, s), "cublasSetStream");
    // Results must not depend on what else runs: no atomics-based split-K reductions.
    check_cublas(cuda::cublas().set_atomics_mode(h, CUBLAS_ATOMICS_NOT_ALLOWED), "cublasSetAtomicsMode");
    // No TF32 for f32 GEMMs.
    check_cublas(cuda::cublas().set_math_mode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    // 32 MiB: what cuBLAS itself takes on sm_90 (4 MiB before); from the pool, so it is counted.
    const int64_t ws = info_.major >= 9 ? int64_t{32} << 20 : int64_t{4} << 20;
    cublas_workspace_ = pool_.allocate(ws, "cuBLAS workspace");
    check_cublas(cuda::cublas().set_workspace(h, cublas_workspace_.data(), static_cast<size_t>(ws)),
                 "cublasSetWorkspace");
  } catch (...) {
    if (cublas_) cuda::cublas().destroy(cublas_);
    cudaStreamDestroy(s);
    throw;
  }
}

CudaBackend::~CudaBackend() {
  cudaSetDevice(index_);
  if (stream_) cudaStreamSynchronize(stream_);
  if (cublas_) cuda::cublas().destroy(cublas_);
  if (stream_) cudaStreamDestroy(stream_);
}

std::string CudaBackend::name() const {
  return fmt::format("cuda:{} ({}, sm_{}{})", index_, info_.name, info_.major, info_.minor);
}

void CudaBackend::enter() const {
  cuda::check(cudaSetDevice(index_), "cudaSetDevice");
}

// Dense f32/bf16/f16 weights everywhere; packed (u32, MLX affine) ones in matmul, the embedding lookup and
// the MoE experts (whose products are matmuls), as on the CPU.
bool CudaBackend::supports(Op op, DType dtype) const {
  if (dtype == DType::u32) return op == Op::matmul || op == Op::embedding || op == Op::moe;
  // The KV cache: f32, or f16 (--cache-type f16: convert writes its rows, attention reads them).
  if (op == Op::convert || op == Op::attention) return dtype == DType::f32 || dtype == DType::f16;
  return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16;
}

void CudaBackend::copy(const Tensor& src, Tensor& dst) {
  host_memory::check_span(src, src.nbytes(), "copy (source)");
  host_memory::check_span(dst, src.nbytes(), "copy (destination)");
  if (src.nbytes() == 0) return;
  enter();
  cuda::check(cudaMemcpyAsync(dst.data(), src.data(), static_cast<size_t>(src.nbytes()),
                              cudaMemcpyDeviceToDevice, stream_),
              "copy");
  if (blocking_) synchronize();
}

void CudaBackend::upload(const void* host, int64_t bytes, Tensor& dst) {
  host_memory::check_span(dst, bytes, "upload");
  if (bytes == 0) return;
  enter();
  cuda::check(cudaMemcpyAsync(dst.data(), host, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, stream_),
              "upload");
  // A pageable source is staged before cudaMemcpyAsync returns; a pinned one would not be, so wait for
  // the copy when the runtime says the buffer is pinned.
  cudaPointerAttributes attr{};
  if (blocking_ || (cudaPointerGetAttributes(&attr, host) == cudaSuccess && attr.type == cudaMemoryTypeHost))
    cuda::check(cudaStreamSynchronize(stream_), "upload");
  cudaGetLastError();
}

void CudaBackend::download(const Tensor& src, void* host, int64_t bytes) {
  host_memory::check_span(src, bytes, "download");
  if (bytes == 0) return;
  enter();
  cuda::check(cudaMemcpyAsync(host, src.data(), static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, stream_),
              "download");
  cuda::check(cudaStreamSynchronize(stream_), "download (the kernels queued before it)");
}

void CudaBackend::fill_zero(Tensor& dst) {
  host_memory::check_span(dst, dst.nbytes(), "fill_zero");
  if (dst.nbytes() == 0) return;
  enter();
  cuda::check(cudaMemsetAsync(dst.data(), 0, static_cast<size_t>(dst.nbytes()), stream_), "fill_zero");
  if (blocking_) synchronize();
}

void CudaBackend::synchronize() {
  enter();
  static std::atomic<int64_t> syncs{0};  // of the process: the hook fires once, not again after a rebuild
  if (fault_at_sync_ > 0 && ++syncs == fault_at_sync_) cuda::launch_fault(stream_);
  cuda::check(cudaStreamSynchronize(stream_), "a kernel of this step");
}

}  // namespace keel
