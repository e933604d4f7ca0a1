#include "ops/gated_deltanet.h"

#include <cmath>
#include <utility>

#include "core/error.h"
#include "ops/op_check.h"
#include "ops/view_access.h"

namespace keel::ops {

namespace {
constexpr const char* kOp = "gated_deltanet";
}  // namespace

namespace {
// The kernel's chunk: 0 for the recurrent form.
int64_t kernel_chunk(const GatedDeltaNetParams& p) {
  return p.form == GatedDeltaNetForm::chunked ? p.chunk_size : 0;
}
}  // namespace

int64_t gated_deltanet_workspace_bytes(const Backend& be, int64_t T, int64_t Hv, int64_t Dk, int64_t Dv,
                                       const GatedDeltaNetParams& p) {
  GatedDeltaNetArgs a;
  a.T = T, a.Hv = Hv, a.Dk = Dk, a.Dv = Dv, a.C = kernel_chunk(p);
  return be.gated_deltanet_workspace(a);
}

void gated_deltanet(Backend& be, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& a,
                    const Tensor& b, const Tensor& A_log, const Tensor& dt_bias, Tensor& state, Tensor& out,
                    const GatedDeltaNetParams& p) {
  check_tensor(kOp, "q", q, {DType::f32}, {kAnyDim, kAnyDim, kAnyDim});
  check_tensor(kOp, "v", v, {DType::f32}, {q.dim(0), kAnyDim, kAnyDim});
  const int64_t T = q.dim(0), Hk = q.dim(1), Dk = q.dim(2), Hv = v.dim(1), Dv = v.dim(2);
  check_tensor(kOp, "k", k, {DType::f32}, {T, Hk, Dk});
  check_tensor(kOp, "a", a, {DType::f32}, {T, Hv});
  check_tensor(kOp, "b", b, {DType::f32}, {T, Hv});
  check_contiguous(kOp, "state", state, {DType::f32}, {Hv, Dk, Dv});
  check_tensor(kOp, "out", out, {DType::f32}, {T, Hv, Dv});
  for (const auto& [name, t] : {std::pair{"A_log", &A_log}, {"dt_bias", &dt_bias}})
    check_contiguous(kOp, name, *t, {DType::f32, DType::bf16, DType::f16}, {Hv});
  if (Hk < 1 || Hv % Hk != 0)
    throw_error(ErrorCode::invalid_argument, "{}: {} value heads do not share {} key heads evenly", kOp, Hv,
                Hk);
  if (p.chunk_size < 1) throw_error(ErrorCode::invalid_argument, "{}: chunk_size {} < 1", kOp, p.chunk_size);
  for (const Tensor* t : {&A_log, &dt_bias}) require_support(be, Op::gated_deltanet, t->dtype(), kOp);
  if (T == 0) return;

  GatedDeltaNetArgs g;
  g.T = T, g.Hk = Hk, g.Hv = Hv, g.Dk = Dk, g.Dv = Dv, g.C = kernel_chunk(p);
  g.qk_l2norm = p.qk_l2norm, g.eps = p.l2norm_eps;
  g.q = q.ptr<float>(), g.q_st = stride_floats(kOp, "q", q, 0), g.q_sh = stride_floats(kOp, "q", q, 1);
  g.k = k.ptr<float>(), g.k_st = stride_floats(kOp, "k", k, 0), g.k_sh = stride_floats(kOp, "k", k, 1);
  g.v = v.ptr<float>(), g.v_st = stride_floats(kOp, "v", v, 0), g.v_sh = stride_floats(kOp, "v", v, 1);
  g.a = a.ptr<float>(), g.a_st = stride_floats(kOp, "a", a, 0), g.a_sh = stride_floats(kOp, "a", a, 1);
  g.b = b.ptr<float>(), g.b_st = stride_floats(kOp, "b", b, 0), g.b_sh = stride_floats(kOp, "b", b, 1);
  g.A_log = {A_log.data(), A_log.dtype()}, g.dt_bias = {dt_bias.data(), dt_bias.dtype()};
  g.state = state.ptr<float>();
  g.out = out.ptr<float>(), g.o_st = stride_floats(kOp, "out", out, 0),
  g.o_sh = stride_floats(kOp, "out", out, 1);
  be.gated_deltanet(g);
}

}  // namespace keel::ops
