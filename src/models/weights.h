// Binding a model's weights by their Hugging Face names. Every tensor is a zero-copy view into the mmap'd
// safetensors (the WeightStore outlives the model), checked against the shape the config implies: a missing
// tensor or a wrong shape is an Error(invalid_file) naming the tensor, the folder and expected vs actual.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "core/tensor.h"
#include "core/weight.h"
#include "load/config.h"
#include "load/weight_store.h"

namespace keel::models {

// y[T, out] = x[T, in] · wᵀ (+ b). w [out, in]: dense as stored, or packed (core/weight.h); b [out] (f32
// copy) or undefined.
struct Linear {
  Weight w;
  Tensor b;
  int64_t in() const { return w.cols(); }
  int64_t out() const { return w.rows(); }
};

void linear(Backend& be, const Linear& l, const Tensor& x, Tensor& y);
// Workspace of linear() for T rows on `be`.
int64_t linear_workspace_bytes(const Backend& be, const Linear& l, int64_t T);

// Reads tensors under a name prefix ("model.layers.3." …). With the config's MLX quantization (`quant`, kept
// alive by the caller), matrices follow it: a module is packed exactly when its `.scales` exists or an entry
// names it with parameters, at that entry's bits and group size or the default ones; without a config they
// are read off the shapes.
class WeightBinder {
 public:
  // `be` is the backend the model runs on: weights are views of its memory (store.place_with), and the
  // f32 copies made here (biases) come from its pool.
  WeightBinder(const WeightStore& store, Backend& be, std::string prefix = {},
               const QuantizationConfig* quant = nullptr)
      : store_(&store), be_(&be), quant_(quant), prefix_(std::move(prefix)) {}
  WeightBinder sub(std::string_view more) const {
    return WeightBinder(*store_, *be_, prefix_ + std::string(more), quant_);
  }

  bool has(std::string_view name) const { return store_->has(full(name)); }
  Tensor get(std::string_view name, std::initializer_list<int64_t> shape) const;
  // `name`.weight [out, in] and, when `bias`, `name`.bias [out]. Biases are widened to an f32 copy counted by
  // the pool (matmul takes an f32 bias); weights stay borrowed. MLX-quantized modules (`name`.weight u32 with
  // `name`.scales and `name`.biases) give a packed Weight. Error(invalid_file) naming the tensor and the
  // config entry when the two disagree (scales present for a module the config says is float, an entry
  // without scales, shapes that do not fit the bits and group size).
  Weight matrix(std::string_view name, int64_t out, int64_t in) const;
  // A 3-D stack [E, out, in] (MLX's switch_mlp experts), dense or packed alike; experts are .select(e).
  Weight stacked(std::string_view name, int64_t E, int64_t out, int64_t in) const;
  Linear linear(std::string_view name, int64_t out, int64_t in, bool bias) const;
  // A 1-D parameter vector (norm weights, A_log, D ...) of n values, borrowed as stored.
  Tensor vec(std::string_view name, int64_t n) const { return get(name, {n}); }
  // A depthwise conv1d weight [C, 1, K] as transformers stores it, or [C, K, 1] as MLX does (the same bytes):
  // a [C, 1, K] view either way.
  Tensor conv_weight(std::string_view name, int64_t C, int64_t K) const;
  std::string full(std::string_view name) const { return prefix_ + std::string(name); }
  const WeightStore& store() const { return *store_; }
  MemoryPool& pool() const { return be_->pool(); }
  Backend& backend() const { return *be_; }
  const QuantizationConfig* quantization() const { return quant_; }

 private:
  Weight bind(std::string_view name, const std::vector<int64_t>& shape) const;
  const WeightStore* store_;
  Backend* be_;
  const QuantizationConfig* quant_;
  std::string prefix_;
};

// An f32 copy of a 1-D f32/bf16/f16 tensor of `be`, from its pool (widened on the host).
Tensor widen_to_f32(const Tensor& t, Backend& be, std::string_view what);

}  // namespace keel::models
