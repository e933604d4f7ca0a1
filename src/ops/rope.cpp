#include "ops/rope.h"

#include <cmath>
#include <vector>

#include "core/error.h"
#include "ops/op_check.h"

namespace keel::ops {

int64_t rope_rotary_dim(int64_t head_dim, double partial_rotary_factor) {
  return static_cast<int64_t>(static_cast<double>(head_dim) * partial_rotary_factor);
}

std::vector<float> rope_inv_freq(double theta, int64_t rotary_dim) {
  std::vector<float> inv_freq(static_cast<size_t>(rotary_dim / 2));
  // torch: 1.0 / (base ** (torch.arange(0, dim, 2, dtype=float32) / dim)), every step in float32.
  const float base = static_cast<float>(theta), dim = static_cast<float>(rotary_dim);
  for (int64_t i = 0; i < rotary_dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / dim;
    inv_freq[static_cast<size_t>(i)] = 1.0f / std::pow(base, exponent);
  }
  return inv_freq;
}

void rope_cos_sin(Backend& be, const Tensor& positions, std::span<const float> inv_freq, Tensor& cos_sin,
                  std::span<const int32_t> host_positions) {
  check_contiguous("rope_cos_sin", "positions", positions, {DType::i32}, {kAnyDim});
  const int64_t T = positions.dim(0), R = 2 * static_cast<int64_t>(inv_freq.size());
  if (R <= 0) throw_error(ErrorCode::invalid_argument, "rope_cos_sin: no frequencies");
  check_tensor("rope_cos_sin", "cos_sin", cos_sin, {DType::f32}, {T, R});
  require_support(be, Op::rope, DType::f32, "rope_cos_sin");
  std::vector<int32_t> downloaded;  // checked on the host (they may live on a device)
  const std::span<const int32_t> pos =
      host_i32(be, "rope_cos_sin", "positions", positions, host_positions, downloaded);
  for (int64_t t = 0; t < T; ++t)
    if (pos[t] < 0)
      throw_error(ErrorCode::invalid_argument, "rope_cos_sin: position {} at token {}", pos[t], t);
  RopeCosSinArgs a;
  a.positions = positions.ptr<const int32_t>(), a.inv_freq = inv_freq.data();
  a.table = static_cast<char*>(cos_sin.data()), a.table_row_bytes = cos_sin.stride_bytes(0);
  a.T = T, a.R = R;
  be.rope_cos_sin(a);
}

void rope_cos_sin(Backend& be, const Tensor& positions, Tensor& cos_sin, const RopeParams& p) {
  check_contiguous("rope_cos_sin", "positions", positions, {DType::i32}, {kAnyDim});
  const int64_t R = p.rotary_dim;
  if (R <= 0 || R % 2 != 0)
    throw_error(ErrorCode::invalid_argument, "rope_cos_sin: rotary_dim must be even and positive, got {}", R);
  if (!(p.theta > 1.0))
    throw_error(ErrorCode::invalid_argument, "rope_cos_sin: theta must be > 1, got {}", p.theta);
  check_tensor("rope_cos_sin", "cos_sin", cos_sin, {DType::f32}, {positions.dim(0), R});
  const std::vector<float> inv_freq = rope_inv_freq(p.theta, R);  // R/2 floats of host bookkeeping
  rope_cos_sin(be, positions, inv_freq, cos_sin);
}

void rope(Backend& be, const Tensor& x, const Tensor& cos_sin, Tensor& out) {
  check_tensor("rope", "x", x, {DType::f32}, {kAnyDim, kAnyDim, kAnyDim});
  const int64_t T = x.dim(0), H = x.dim(1), D = x.dim(2);
  check_tensor("rope", "out", out, {DType::f32}, {T, H, D});
  check_tensor("rope", "cos_sin", cos_sin, {DType::f32}, {T, kAnyDim});
  const int64_t R = cos_sin.dim(1);
  if (R % 2 != 0 || R > D)
    throw_error(ErrorCode::invalid_argument, "rope: rotary_dim {} must be even and ≤ head_dim {}", R, D);
  require_support(be, Op::rope, DType::f32, "rope");
  RopeArgs a;
  a.x = static_cast<const char*>(x.data()), a.x_st = x.stride_bytes(0), a.x_sh = x.stride_bytes(1);
  a.out = static_cast<char*>(out.data()), a.o_st = out.stride_bytes(0), a.o_sh = out.stride_bytes(1);
  a.table = static_cast<const char*>(cos_sin.data()), a.table_row_bytes = cos_sin.stride_bytes(0);
  a.T = T, a.H = H, a.D = D, a.R = R;
  be.rope(a);
}

void rope(Backend& be, const Tensor& x, const Tensor& positions, Tensor& out, const RopeParams& p) {
  check_contiguous("rope", "positions", positions, {DType::i32}, {kAnyDim});
  Tensor table = Tensor::empty(be.pool(), DType::f32, {positions.dim(0), p.rotary_dim > 0 ? p.rotary_dim : 0},
                               "rope cos/sin table");
  rope_cos_sin(be, positions, table, p);
  rope(be, x, table, out);
}

}  // namespace keel::ops
