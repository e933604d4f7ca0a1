// cuBLAS, opened with dlopen when the first CudaBackend is made. keel links only cudart: a keel that never
// runs on a GPU (or runs under an address-space limit, tests/engine/memory_rlimit_test.cpp) never maps
// cuBLAS's ~600 MB of libraries. Each entry is the cuBLAS function of the same name (the _v2 ABI).
#pragma once
#include <cublas_v2.h>

namespace keel::cuda {

struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&cublasSetAtomicsMode) set_atomics_mode = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  // The cublasComputeType_t overload (C++ also sees an inline cudaDataType one).
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*,
                            void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
};

// The loaded library (once per process): libcublas.so.<major> from the loader's search path, else from the
// toolkit's library folder keel was built against. Throws Error(unsupported) naming the file and dlerror().
const CublasApi& cublas();

// Throws Error(internal) "cuBLAS error in <what>: <status>" unless `s` is CUBLAS_STATUS_SUCCESS.
void check_cublas(cublasStatus_t s, const char* what);

}  // namespace keel::cuda
