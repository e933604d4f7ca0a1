#include "ops/ssd_scan.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"
#include "ops/op_check.h"
#include "ops/view_access.h"

namespace keel::ops {

namespace {
constexpr const char* kOp = "ssd_scan";
}  // namespace

int64_t ssd_scan_workspace_bytes(const Backend& be, int64_t T, int64_t H, int64_t P, int64_t G, int64_t N,
                                 int64_t chunk_size) {
  SsdScanArgs a;
  a.T = T, a.H = H, a.P = P, a.G = G, a.N = N, a.Q = chunk_size;
  return be.ssd_scan_workspace(a);
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
  for (const Tensor* t : {&A_log, &dt_bias, &D}) require_support(be, Op::ssd_scan, t->dtype(), kOp);
  if (T == 0) return;

  SsdScanArgs a;
  a.T = T, a.H = H, a.P = P, a.G = G, a.N = N, a.Q = p.chunk_size;
  a.x = x.ptr<float>(), a.x_st = stride_floats(kOp, "x", x, 0), a.x_sh = stride_floats(kOp, "x", x, 1);
  a.dt = dt_raw.ptr<float>(), a.dt_st = stride_floats(kOp, "dt_raw", dt_raw, 0),
  a.dt_sh = stride_floats(kOp, "dt_raw", dt_raw, 1);
  a.B = B.ptr<float>(), a.B_st = stride_floats(kOp, "B", B, 0), a.B_sg = stride_floats(kOp, "B", B, 1);
  a.C = C.ptr<float>(), a.C_st = stride_floats(kOp, "C", C, 0), a.C_sg = stride_floats(kOp, "C", C, 1);
  a.A_log = {A_log.data(), A_log.dtype()}, a.dt_bias = {dt_bias.data(), dt_bias.dtype()};
  a.D = {D.data(), D.dtype()};
  a.state = state.ptr<float>();
  a.y = y.ptr<float>(), a.y_st = stride_floats(kOp, "y", y, 0), a.y_sh = stride_floats(kOp, "y", y, 1);
  a.dt_min = p.dt_min, a.dt_max = p.dt_max;
  be.ssd_scan(a);
}

}  // namespace keel::ops
