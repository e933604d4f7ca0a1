#include "models/weights.h"

#include "core/error.h"
#include "ops/matmul.h"

namespace keel::models {

void linear(Backend& be, const Linear& l, const Tensor& x, Tensor& y) {
  if (l.b.defined() && l.b.numel() > 0)
    ops::matmul(be, x, l.w, l.b, y);
  else
    ops::matmul(be, x, l.w, y);
}

int64_t linear_workspace_bytes(const Backend& be, const Linear& l, int64_t T) {
  return ops::matmul_workspace_bytes(be, T, l.in(), l.out(), l.w);
}

Tensor WeightBinder::get(std::string_view name, std::initializer_list<int64_t> shape) const {
  return store_->get(full(name), shape);
}

Weight WeightBinder::matrix(std::string_view name, int64_t out, int64_t in) const {
  const std::string base(name);
  if (!has(base + ".scales")) return get(base + ".weight", {out, in});
  // MLX affine: weight u32 [out, in·bits/32], scales and biases [out, in/group_size].
  const Tensor words = store_->get(full(base + ".weight"));
  const Tensor scales = store_->get(full(base + ".scales"));
  if (words.ndim() != 2 || scales.ndim() != 2 || words.dim(1) < 1 || scales.dim(1) < 1 ||
      (words.dim(1) * 32) % in != 0 || in % scales.dim(1) != 0)
    throw_error(ErrorCode::invalid_file, "{}: packed weight {} and scales {} do not fit [{}, {}]",
                full(base + ".weight"), words.shape_string(), scales.shape_string(), out, in);
  const int32_t bits = static_cast<int32_t>(words.dim(1) * 32 / in);
  const int32_t group = static_cast<int32_t>(in / scales.dim(1));
  Weight w =
      Weight::packed(get(base + ".weight", {out, words.dim(1)}), get(base + ".scales", {out, in / group}),
                     get(base + ".biases", {out, in / group}), bits, group, full(base + ".weight"));
  return w;
}

Linear WeightBinder::linear(std::string_view name, int64_t out, int64_t in, bool bias) const {
  std::string base(name);
  Linear l;
  l.w = matrix(base, out, in);
  if (bias) l.b = widen_to_f32(get(base + ".bias", {out}), *pool_, full(base + ".bias"));
  return l;
}

Tensor widen_to_f32(const Tensor& t, MemoryPool& pool, std::string_view what) {
  if (t.ndim() != 1)
    throw_error(ErrorCode::invalid_argument, "{}: expected a vector, got {}", what, t.shape_string());
  const int64_t n = t.dim(0);
  Tensor out = Tensor::empty(pool, DType::f32, {n}, what);
  float* o = out.ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    const void* p = t.at(i);
    switch (t.dtype()) {
      case DType::f32:
        o[i] = *static_cast<const float*>(p);
        break;
      case DType::bf16:
        o[i] = bf16_to_f32(*static_cast<const uint16_t*>(p));
        break;
      case DType::f16:
        o[i] = f16_to_f32(*static_cast<const uint16_t*>(p));
        break;
      default:
        throw_error(ErrorCode::unsupported, "{}: dtype {} where f32/bf16/f16 was expected", what,
                    dtype_name(t.dtype()));
    }
  }
  return out;
}

}  // namespace keel::models
