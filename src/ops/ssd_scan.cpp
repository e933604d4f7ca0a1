#include "ops/ssd_scan.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "backend/cpu/ssd_scan.h"
#include "core/error.h"
#include "ops/op_check.h"
#include "ops/view_access.h"

namespace keel::ops {

namespace {
constexpr const char* kOp = "ssd_scan";
}  // namespace

int64_t ssd_scan_workspace_bytes(int64_t T, int64_t H, int64_t P, int64_t G, int64_t N, int64_t chunk_size,
                                 int n_threads) {
  return 4 * 3 * H + cpu::ssd_scan_kernel_workspace_bytes(T, H, P, G, N, chunk_size, n_threads);
}

void ssd_scan(Backend& be, const Tensor& x, const Tensor& dt_raw, const Tensor& B, const Tensor& C,
              const Tensor& A_log, const Tensor& dt_bias, const Tensor& D, Tensor& state, Tensor& y,
              const SsdScanParams& p) {
  check_tensor(kOp, "x", x, {DType::f32}, {kAnyDim, kAnyDim, kAnyDim});
  check_tensor(kOp, "B", B, {DType::f32}, {kAnyDim, kAnyDim, kAnyDim});
  const int64_t T = x.dim(0), H = x.dim(1), P = x.dim(2), G = B.dim(1), N = B.dim(2);
  check_tensor(kOp, "dt_raw", dt_raw, {DType::f32}, {T, H});
  check_tensor(kOp, "B", B, {DType::f32}, {T, G, N});
  check_tensor(kOp, "C", C, {DType::f32}, {T, G, N});
  check_contiguous(kOp, "state", state, {DType::f32}, {H, P, N});
  check_tensor(kOp, "y", y, {DType::f32}, {T, H, P});
  for (const auto& [name, t] : {std::pair{"A_log", &A_log}, {"dt_bias", &dt_bias}, {"D", &D}})
    check_contiguous(kOp, name, *t, {DType::f32, DType::bf16, DType::f16}, {H});
  if (G < 1 || H % G != 0)
    throw_error(ErrorCode::invalid_argument, "{}: {} heads do not split into {} groups", kOp, H, G);
  if (p.chunk_size < 1) throw_error(ErrorCode::invalid_argument, "{}: chunk_size {} < 1", kOp, p.chunk_size);
  if (!(p.dt_min <= p.dt_max))
    throw_error(ErrorCode::invalid_argument, "{}: time_step_limit ({}, {}) is empty", kOp, p.dt_min,
                p.dt_max);
  if (be.kind() != DeviceKind::cpu) unsupported_backend(kOp, be);
  if (T == 0) return;

  // A = −exp(A_log), dt_bias and D widened to f32 once (the 3·H floats of the workspace).
  Tensor params = Tensor::empty(be.pool(), DType::f32, {3, H}, "ssd_scan parameters");
  float* A = params.ptr<float>();
  for (int64_t h = 0; h < H; ++h) {
    A[h] = -std::exp(param_at(A_log, h));
    A[H + h] = param_at(dt_bias, h);
    A[2 * H + h] = param_at(D, h);
  }
  cpu::SsdScanArgs a;
  a.T = T, a.H = H, a.P = P, a.G = G, a.N = N, a.Q = p.chunk_size;
  a.x = x.ptr<float>(), a.x_st = stride_floats(kOp, "x", x, 0), a.x_sh = stride_floats(kOp, "x", x, 1);
  a.dt = dt_raw.ptr<float>(), a.dt_st = stride_floats(kOp, "dt_raw", dt_raw, 0),
  a.dt_sh = stride_floats(kOp, "dt_raw", dt_raw, 1);
  a.B = B.ptr<float>(), a.B_st = stride_floats(kOp, "B", B, 0), a.B_sg = stride_floats(kOp, "B", B, 1);
  a.C = C.ptr<float>(), a.C_st = stride_floats(kOp, "C", C, 0), a.C_sg = stride_floats(kOp, "C", C, 1);
  a.A = A, a.dt_bias = A + H, a.D = A + 2 * H;
  a.state = state.ptr<float>();
  a.y = y.ptr<float>(), a.y_st = stride_floats(kOp, "y", y, 0), a.y_sh = stride_floats(kOp, "y", y, 1);
  a.dt_min = p.dt_min, a.dt_max = p.dt_max;
  cpu::ssd_scan(static_cast<CpuBackend&>(be), a);
}

}  // namespace keel::ops
