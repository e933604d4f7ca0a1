#include "backend/cuda/cuda_device.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace keel::cuda {

namespace {
std::atomic<bool> g_context_lost{false};
}  // namespace

// device_util.cuh's launch(): programmatic dependent launch on compute capability ≥ 9 unless KEEL_CUDA_PDL=0.
bool pdl_enabled() {
  static const bool on = [] {
    const char* env = std::getenv("KEEL_CUDA_PDL");
    if (env != nullptr && std::strcmp(env, "0") == 0) return false;
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
      (void)cudaGetLastError();  // no device: launches fail on their own, without the attribute
      return false;
    }
    return major >= 9;
  }();
  return on;
}

bool context_lost() {
  return g_context_lost.load();
}

void check(int status, const char* what) {
  const auto err = static_cast<cudaError_t>(status);
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clears the error where the runtime lets it be cleared (not the sticky ones)
  // A sticky error (an illegal address, a kernel fault) stays: the context is unusable from now on, and every
  // call that reaches it fails (cudaGetLastError does not tell: it resets its own record either way). A
  // device-wide sync answers: it fails only on a context that is lost (or on another kernel's fault).
  const bool sticky = cudaDeviceSynchronize() != cudaSuccess;
  cudaGetLastError();
  if (sticky) g_context_lost = true;
  throw_error(
      ErrorCode::internal, "CUDA error in {}: {} ({}){}", what, cudaGetErrorName(err),
      cudaGetErrorString(err),
      sticky
          ? "; the error is sticky: this process's CUDA context is lost (keel serve restarts itself; other "
            "commands must be run again)"
          : "");
}

int device_count(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (why) *why = fmt::format("{} ({})", cudaGetErrorName(err), cudaGetErrorString(err));
    cudaGetLastError();
    return 0;
  }
  if (n == 0 && why) *why = "the driver reports no device";
  return n;
}

DeviceInfo device_info(int index) {
  std::string why;
  const int n = device_count(&why);
  if (n == 0)
    throw_error(ErrorCode::invalid_argument, "cuda:{}: no CUDA device on this machine: {}", index, why);
  if (index < 0 || index >= n)
    throw_error(ErrorCode::invalid_argument, "cuda:{}: this machine has {} CUDA device{} (cuda:0{})", index,
                n, n == 1 ? "" : "s", n == 1 ? "" : fmt::format("..cuda:{}", n - 1));
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties");
  check(cudaSetDevice(index), "cudaSetDevice");
  size_t free_b = 0, total_b = 0;
  check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  return DeviceInfo{
      index, prop.name, prop.major, prop.minor, static_cast<int64_t>(total_b), static_cast<int64_t>(free_b)};
}

int64_t free_bytes(int index) {
  check(cudaSetDevice(index), "cudaSetDevice");
  size_t free_b = 0, total_b = 0;
  check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  return static_cast<int64_t>(free_b);
}

ArenaAllocator::ArenaAllocator(int index, int64_t capacity_bytes) : index_(index), arena_(capacity_bytes) {
  check(cudaSetDevice(index), "cudaSetDevice");
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, static_cast<size_t>(capacity_bytes));
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw_error(ErrorCode::out_of_memory, "cuda:{}: cannot reserve {} bytes of device memory: {} ({})", index,
                capacity_bytes, cudaGetErrorName(err), cudaGetErrorString(err));
  }
  base_ = static_cast<char*>(p);
}

ArenaAllocator::~ArenaAllocator() {
  if (base_) cudaFree(base_);
}

void* ArenaAllocator::allocate(int64_t bytes, int64_t alignment) {
  // 256-byte alignment at least: what cudaMalloc itself guarantees, and what vector loads want.
  const auto off = arena_.allocate(bytes > 0 ? bytes : 1, alignment < 256 ? 256 : alignment);
  return off ? base_ + *off : nullptr;
}

void ArenaAllocator::release(void* ptr, int64_t bytes) {
  arena_.release(static_cast<char*>(ptr) - base_, bytes > 0 ? bytes : 1);
}

}  // namespace keel::cuda
