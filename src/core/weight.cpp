#include "core/weight.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/quant.h"

namespace keel {

Weight Weight::packed(Tensor words, Tensor scales, Tensor biases, int32_t bits, int32_t group_size,
                      std::string_view what) {
  if (bits != 2 && bits != 3 && bits != 4 && bits != 5 && bits != 6 && bits != 8)
    throw_error(ErrorCode::invalid_argument, "{}: {} bits per packed weight (2, 3, 4, 5, 6 or 8)", what,
                bits);
  if (words.dtype() != DType::u32 || words.ndim() < 2)
    throw_error(ErrorCode::invalid_argument, "{}: packed words must be u32 [.., rows, words], got {} {}",
                what, dtype_name(words.dtype()), words.shape_string());
  const int64_t cols = words.dim(-1) * 32 / bits;
  // MLX's group sizes, which every kernel assumes (the CPU's lanes and the CUDA tiles' 32-value stages).
  if (!quant::valid_group_size(group_size))
    throw_error(ErrorCode::invalid_argument, "{}: groups of {} values (MLX affine: 32, 64 or 128)", what,
                group_size);
  if ((words.dim(-1) * 32) % bits != 0 || cols % group_size != 0)
    throw_error(ErrorCode::invalid_argument, "{}: {} words of {} bits do not split into groups of {}", what,
                words.dim(-1), bits, group_size);
  for (const Tensor* t : {&scales, &biases}) {
    bool ok = t->ndim() == words.ndim() && t->dim(-1) == cols / group_size &&
              (t->dtype() == DType::f32 || t->dtype() == DType::bf16 || t->dtype() == DType::f16);
    for (int d = 0; ok && d + 1 < words.ndim(); ++d) ok = t->dim(d) == words.dim(d);
    if (!ok)
      throw_error(ErrorCode::invalid_argument,
                  "{}: scales and biases must be f32/bf16/f16 with {} groups per row, got {} {}", what,
                  cols / group_size, dtype_name(t->dtype()), t->shape_string());
  }
  Weight w;
  w.data = std::move(words), w.scales = std::move(scales), w.biases = std::move(biases);
  w.bits = bits, w.group_size = group_size;
  return w;
}

int64_t Weight::nbytes() const {
  return data.nbytes() + (is_packed() ? scales.nbytes() + biases.nbytes() : 0);
}

Weight Weight::slice_rows(int64_t begin, int64_t n) const {
  const int dim = data.ndim() - 2;
  Weight w = *this;
  w.data = data.slice(dim, begin, n);
  if (is_packed()) w.scales = scales.slice(dim, begin, n), w.biases = biases.slice(dim, begin, n);
  return w;
}

Weight Weight::select(int64_t e) const {
  Weight w = *this;
  w.data = data.select(e);
  if (is_packed()) w.scales = scales.select(e), w.biases = biases.select(e);
  return w;
}

std::string Weight::describe() const {
  if (!is_packed()) return fmt::format("{} {}", dtype_name(dtype()), data.shape_string());
  return fmt::format("{}-bit (group {}) [{}, {}]", bits, group_size, data.ndim() == 2 ? rows() : data.dim(-2),
                     data.ndim() == 2 ? cols() : data.dim(-1) * 32 / bits);
}

}  // namespace keel
