#include "ops/rope.h"

#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/rope.h"
#include "backend/cpu/thread_pool.h"
#include "core/error.h"
#include "ops/op_check.h"

namespace keel::ops {

int64_t rope_rotary_dim(int64_t head_dim, double partial_rotary_factor) {
  return static_cast<int64_t>(static_cast<double>(head_dim) * partial_rotary_factor);
}

void rope_cos_sin(Backend& be, const Tensor& positions, Tensor& cos_sin, const RopeParams& p) {
  check_contiguous("rope_cos_sin", "positions", positions, {DType::i32}, {kAnyDim});
  const int64_t T = positions.dim(0), R = p.rotary_dim;
  if (R <= 0 || R % 2 != 0)
    throw_error(ErrorCode::invalid_argument, "rope_cos_sin: rotary_dim must be even and positive, got {}", R);
  if (!(p.theta > 1.0))
    throw_error(ErrorCode::invalid_argument, "rope_cos_sin: theta must be > 1, got {}", p.theta);
  check_tensor("rope_cos_sin", "cos_sin", cos_sin, {DType::f32}, {T, R});
  CpuBackend& cpu = cpu_backend("rope_cos_sin", be);
  std::vector<float> inv_freq(static_cast<size_t>(R / 2));  // R/2 floats of host bookkeeping, not a tensor
  cpu::rope_inv_freq(p.theta, R, inv_freq.data());
  const int32_t* pos = positions.ptr<const int32_t>();
  for (int64_t t = 0; t < T; ++t)
    if (pos[t] < 0)
      throw_error(ErrorCode::invalid_argument, "rope_cos_sin: position {} at token {}", pos[t], t);
  cpu.threads()->parallel_for(T, [&](int64_t begin, int64_t end, int) {
    for (int64_t t = begin; t < end; ++t)
      cpu::rope_cos_sin_row(pos[t], inv_freq.data(), R, static_cast<float*>(cos_sin.at(t)));
  });
}

void rope(Backend& be, const Tensor& x, const Tensor& cos_sin, Tensor& out) {
  check_tensor("rope", "x", x, {DType::f32}, {kAnyDim, kAnyDim, kAnyDim});
  const int64_t T = x.dim(0), H = x.dim(1), D = x.dim(2);
  check_tensor("rope", "out", out, {DType::f32}, {T, H, D});
  check_tensor("rope", "cos_sin", cos_sin, {DType::f32}, {T, kAnyDim});
  const int64_t R = cos_sin.dim(1);
  if (R % 2 != 0 || R > D)
    throw_error(ErrorCode::invalid_argument, "rope: rotary_dim {} must be even and ≤ head_dim {}", R, D);
  CpuBackend& cpu = cpu_backend("rope", be);
  cpu.threads()->parallel_for(T * H, [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t t = i / H, h = i % H;
      cpu::rope_head(static_cast<const float*>(x.at(t, h)), static_cast<float*>(out.at(t, h)), D, R,
                     static_cast<const float*>(cos_sin.at(t)));
    }
  });
}

void rope(Backend& be, const Tensor& x, const Tensor& positions, Tensor& out, const RopeParams& p) {
  check_contiguous("rope", "positions", positions, {DType::i32}, {kAnyDim});
  Tensor table = Tensor::empty(be.pool(), DType::f32, {positions.dim(0), p.rotary_dim > 0 ? p.rotary_dim : 0},
                               "rope cos/sin table");
  rope_cos_sin(be, positions, table, p);
  rope(be, x, table, out);
}

}  // namespace keel::ops
