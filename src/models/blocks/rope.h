// RoPE frequencies per the config's rope_type, as transformers computes them (modeling_rope_utils.py), and
// the step's cos/sin table that every attention layer of the step shares.
//   default: inv_freq[i] = 1 / theta^(2i / R), in float32 as torch does;
//   linear:  inv_freq / factor;
//   llama3:  wavelengths above original_max_position_embeddings / low_freq_factor divided by factor, below
//            original / high_freq_factor kept, smoothly interpolated between.
// Other types (dynamic, yarn, longrope, ...) are Error(unsupported).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "core/tensor.h"
#include "load/config.h"

namespace keel::models {

class RopeTable {
 public:
  // rotary_dim = int(head_dim · partial_rotary_factor). Throws Error(unsupported) for a rope_type keel lacks.
  RopeTable(const RopeConfig& rope, int64_t head_dim);
  int64_t rotary_dim() const { return rotary_dim_; }
  const std::vector<float>& inv_freq() const { return inv_freq_; }
  // table [T, rotary_dim] f32: row t = cos of the angles inv_freq · positions[t], then their sin;
  // positions i32 [T], on `be`; host_positions their host copy (checked instead of a download).
  void fill(Backend& be, const Tensor& positions, Tensor& table,
            std::span<const int32_t> host_positions = {}) const;
  int64_t table_bytes(int64_t T) const { return 4 * T * rotary_dim_; }

 private:
  int64_t rotary_dim_ = 0;
  std::vector<float> inv_freq_;  // [rotary_dim / 2]
};

}  // namespace keel::models
