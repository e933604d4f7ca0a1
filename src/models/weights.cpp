#include "models/weights.h"

#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/quant.h"
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

namespace {
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}
}  // namespace

Weight WeightBinder::bind(std::string_view name, const std::vector<int64_t>& shape) const {
  const std::string base(name), path = full(base);
  const std::optional<QuantParams>* entry = quant_ ? quant_->find(path) : nullptr;
  const int64_t in = shape.back();
  const bool every = quant_ && quant_->every_matrix && !(entry && !entry->has_value()) &&
                     in % quant_->base.group_size == 0 && (in * quant_->base.bits) % 32 == 0;
  const bool has_scales = every || has(base + ".scales");
  if (entry && !entry->has_value()) {
    if (has_scales)
      throw_error(
          ErrorCode::invalid_file,
          "{}.scales exists, but config.json quantization[\"{}\"] is false (the module is not quantized)",
          path, path);
    return store_->get(path + ".weight", shape);
  }
  if (!has_scales) {
    if (entry)
      throw_error(
          ErrorCode::invalid_file,
          "config.json quantization[\"{}\"] quantizes {} ({}-bit, group {}), but {}.scales is missing", path,
          path, (*entry)->bits, (*entry)->group_size, path);
    const WeightInfo* info = store_->find(path + ".weight");
    if (info && info->record->dtype == DType::u32)
      throw_error(ErrorCode::invalid_file, "{}.weight is U32 (packed words), but {}.scales is missing", path,
                  path);
    return store_->get(path + ".weight", shape);
  }
  if (!every && !has(base + ".biases"))
    throw_error(ErrorCode::invalid_file, "{}.scales exists, but {}.biases is missing (MLX affine needs both)",
                path, path);
  QuantParams p;
  std::string from;
  if (entry) {
    p = **entry, from = fmt::format("config.json quantization[\"{}\"]", path);
  } else if (quant_) {
    p = quant_->base, from = "config.json quantization";
  } else {  // no config: read off the shapes
    const Tensor words = store_->get(path + ".weight"), scales = store_->get(path + ".scales");
    if (words.ndim() != static_cast<int>(shape.size()) || scales.ndim() != words.ndim() ||
        words.dim(-1) < 1 || scales.dim(-1) < 1 || (words.dim(-1) * 32) % in != 0 || in % scales.dim(-1) != 0)
      throw_error(ErrorCode::invalid_file, "{}: packed weight {} and scales {} do not fit {}",
                  path + ".weight", words.shape_string(), scales.shape_string(), shape_text(shape));
    p.bits = static_cast<int32_t>(words.dim(-1) * 32 / in);
    p.group_size = static_cast<int32_t>(in / scales.dim(-1));
    from = "the shapes";
    if (!quant::valid_bits(p.bits) || !quant::valid_group_size(p.group_size))
      throw_error(ErrorCode::invalid_file,
                  "{}: packed weight {} and scales {} give {}-bit values in groups of {} (MLX affine: 2, 3, "
                  "4, 5, 6 or 8 bits, groups of 32, 64 or 128)",
                  path + ".weight", words.shape_string(), scales.shape_string(), p.bits, p.group_size);
  }
  if ((in * p.bits) % 32 != 0 || in % p.group_size != 0)
    throw_error(ErrorCode::invalid_file,
                "{}: {} input columns do not split into {}-bit words and groups of {} ({})", path, in, p.bits,
                p.group_size, from);
  std::vector<int64_t> wshape = shape, sshape = shape;
  wshape.back() = in * p.bits / 32;
  sshape.back() = in / p.group_size;
  try {
    // scales and biases first: a store that makes tensors on demand learns from them that the words are
    // packed
    Tensor scales = store_->get(path + ".scales", sshape), biases = store_->get(path + ".biases", sshape);
    return Weight::packed(store_->get(path + ".weight", wshape), scales, biases, p.bits, p.group_size,
                          path + ".weight");
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("{} (packed {}-bit, group {}, per {}; logical shape {})", e.what(),
                                      p.bits, p.group_size, from, shape_text(shape)));
  }
}

Weight WeightBinder::matrix(std::string_view name, int64_t out, int64_t in) const {
  return bind(name, {out, in});
}

Weight WeightBinder::stacked(std::string_view name, int64_t E, int64_t out, int64_t in) const {
  return bind(name, {E, out, in});
}

Tensor WeightBinder::conv_weight(std::string_view name, int64_t C, int64_t K) const {
  if (const WeightInfo* info = store_->find(full(name)); info && K != 1) {
    const std::vector<int64_t>& s = info->record->shape;
    if (s.size() == 3 && s[0] == C && s[1] == K && s[2] == 1)
      return store_->get(full(name)).reshape({C, 1, K});  // MLX's [C, K, 1]: the same bytes
  }
  return get(name, {C, 1, K});  // (a store that makes tensors on demand makes it in this shape)
}

Linear WeightBinder::linear(std::string_view name, int64_t out, int64_t in, bool bias) const {
  std::string base(name);
  Linear l;
  l.w = matrix(base, out, in);
  if (bias) l.b = widen_to_f32(get(base + ".bias", {out}), *be_, full(base + ".bias"));
  return l;
}

Tensor widen_to_f32(const Tensor& t, Backend& be, std::string_view what) {
  if (t.ndim() != 1)
    throw_error(ErrorCode::invalid_argument, "{}: expected a vector, got {}", what, t.shape_string());
  if (t.dtype() != DType::f32 && t.dtype() != DType::bf16 && t.dtype() != DType::f16)
    throw_error(ErrorCode::unsupported, "{}: dtype {} where f32/bf16/f16 was expected", what,
                dtype_name(t.dtype()));
  const int64_t n = t.dim(0), esize = dtype_info(t.dtype()).block_bytes;
  std::vector<uint8_t> raw(static_cast<size_t>(n * esize));  // t's values on the host
  if (t.is_contiguous()) {
    be.download(t, raw.data(), n * esize);
  } else {
    for (int64_t i = 0; i < n; ++i) be.download(t.slice(0, i, 1), raw.data() + i * esize, esize);
  }
  std::vector<float> wide(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = raw.data() + i * esize;
    uint16_t h = 0;
    if (esize == 2) std::memcpy(&h, p, 2);
    wide[static_cast<size_t>(i)] = t.dtype() == DType::bf16  ? bf16_to_f32(h)
                                   : t.dtype() == DType::f16 ? f16_to_f32(h)
                                                             : *reinterpret_cast<const float*>(p);
  }
  Tensor out = Tensor::empty(be.pool(), DType::f32, {n}, what);
  be.upload(wide.data(), 4 * n, out);
  return out;
}

}  // namespace keel::models
