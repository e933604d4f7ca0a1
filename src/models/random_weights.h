// A model from config.json alone, for measuring real-size shapes without their weight files (keel bench
// --random-weights, memory tests past a fixture's max_position_embeddings). The model's own binding code runs
// against WeightStore::on_demand: each tensor it asks for is allocated from the backend's pool (so the pool's
// in_use after building is the weights' real bytes) and filled in place, in the config's dtype, with values
// that keep activations bounded:
//   1-D tensors named *norm*   1 (RMSNorm weights)
//   other 1-D tensors          uniform in [−0.5, 0.5) (biases, A_log, D, dt_bias, router bias)
//   [..., in] tensors          uniform in [−a, a), a = √(3 / in): unit variance out for unit variance in
// Each value is a hash of (seed, tensor name, element index): the same for any thread count or binding order.
// With `quant` (bits > 0) every matrix whose input splits into groups is MLX-packed instead (the model's
// binding asks for X.scales and X.biases before X.weight): random q words, scales 2a/(2^bits − 1) and biases
// −a in the config's dtype, so the dequantized values are uniform-ish in [−a, a] as above.
#pragma once
#include <cstdint>
#include <string>

#include "backend/backend.h"
#include "core/dtype.h"
#include "load/config.h"
#include "models/loader.h"

namespace keel::models {

// DIR/config.json → the model with random weights in the config's "dtype" (or "torch_dtype"; bf16 when
// absent). Errors as load_model's, and Error(out_of_memory) naming the tensor when the weights do not fit the
// pool.
// kv_cache: as load_model's.
LoadedModel random_weights_model(const std::string& dir, Backend& be, uint64_t seed = 1,
                                 QuantParams quant = {}, DType kv_cache = DType::f32);
// The same from a parsed config (tests edit it first). `label` names the model in errors.
LoadedModel random_weights_model(const ModelConfig& config, DType dtype, Backend& be, uint64_t seed = 1,
                                 const std::string& label = "random weights", QuantParams quant = {});
// "bfloat16" / "float16" / "float32" from DIR/config.json's "dtype" or "torch_dtype"; bf16 when neither is
// set. Error(unsupported) for another value.
DType config_weight_dtype(const std::string& dir);

}  // namespace keel::models
