#include "backend/cuda/cublas_api.h"

#include <dlfcn.h>

#include <string>

#include "core/error.h"

namespace keel::cuda {

namespace {

template <class Fn>
void bind(void* lib, const char* name, Fn& fn, const std::string& file) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn) throw_error(ErrorCode::unsupported, "{} has no {}: {}", file, name, dlerror());
}

CublasApi load() {
  const std::string file = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string why = lib ? "" : dlerror();
#ifdef KEEL_CUDA_LIBRARY_DIR
  if (!lib) lib = dlopen((std::string(KEEL_CUDA_LIBRARY_DIR) + "/" + file).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
  if (!lib)
    throw_error(ErrorCode::unsupported, "cannot load {} (cuBLAS, for the CUDA backend): {}", file, why);
  CublasApi api;  // the library stays loaded for the process's life
  bind(lib, "cublasCreate_v2", api.create, file);
  bind(lib, "cublasDestroy_v2", api.destroy, file);
  bind(lib, "cublasSetStream_v2", api.set_stream, file);
  bind(lib, "cublasSetWorkspace_v2", api.set_workspace, file);
  bind(lib, "cublasSetAtomicsMode", api.set_atomics_mode, file);
  bind(lib, "cublasSetMathMode", api.set_math_mode, file);
  bind(lib, "cublasGetStatusString", api.status_string, file);
  bind(lib, "cublasSgemm_v2", api.sgemm, file);
  bind(lib, "cublasGemmEx", api.gemm_ex, file);
  return api;
}

}  // namespace

const CublasApi& cublas() {
  static const CublasApi api = load();
  return api;
}

void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw_error(ErrorCode::internal, "cuBLAS error in {}: {}", what, cublas().status_string(s));
}

}  // namespace keel::cuda
