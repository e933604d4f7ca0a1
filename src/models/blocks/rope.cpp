#include "models/blocks/rope.h"

#include <cmath>
#include <numbers>

#include "core/error.h"
#include "ops/rope.h"

namespace keel::models {

RopeTable::RopeTable(const RopeConfig& rope, int64_t head_dim)
    : rotary_dim_(ops::rope_rotary_dim(head_dim, rope.partial_rotary_factor)) {
  if (rotary_dim_ <= 0 || rotary_dim_ % 2 != 0)
    throw_error(ErrorCode::invalid_file,
                "rope: rotary dimension {} (head_dim {} × partial_rotary_factor {}) must be even",
                rotary_dim_, head_dim, rope.partial_rotary_factor);
  inv_freq_ = ops::rope_inv_freq(rope.theta, rotary_dim_);
  if (rope.type == "default") return;
  if (rope.type == "linear") {
    if (!rope.factor) throw_error(ErrorCode::invalid_file, "rope_type linear without a factor");
    const float f = static_cast<float>(*rope.factor);
    for (float& v : inv_freq_) v /= f;
    return;
  }
  if (rope.type == "llama3") {
    if (!rope.factor || !rope.low_freq_factor || !rope.high_freq_factor ||
        !rope.original_max_position_embeddings)
      throw_error(ErrorCode::invalid_file,
                  "rope_type llama3 needs factor, low_freq_factor, high_freq_factor and "
                  "original_max_position_embeddings");
    // transformers' _compute_llama3_parameters, elementwise on float32 tensors.
    const float factor = static_cast<float>(*rope.factor), lo = static_cast<float>(*rope.low_freq_factor),
                hi = static_cast<float>(*rope.high_freq_factor);
    const float old_ctx = static_cast<float>(*rope.original_max_position_embeddings);
    const float low_wavelen = old_ctx / lo, high_wavelen = old_ctx / hi;
    for (float& v : inv_freq_) {
      const float wavelen = 2.0f * std::numbers::pi_v<float> / v;
      float scaled = wavelen > low_wavelen ? v / factor : v;
      const float smooth = (old_ctx / wavelen - lo) / (hi - lo);
      const float smoothed = (1.0f - smooth) * scaled / factor + smooth * scaled;
      const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
      v = medium ? smoothed : scaled;
    }
    return;
  }
  throw_error(ErrorCode::unsupported, "rope_type \"{}\" is not supported (default, linear, llama3)",
              rope.type);
}

void RopeTable::fill(Backend& be, const Tensor& positions, Tensor& table,
                     std::span<const int32_t> host_positions) const {
  ops::rope_cos_sin(be, positions, inv_freq_, table, host_positions);
}

}  // namespace keel::models
