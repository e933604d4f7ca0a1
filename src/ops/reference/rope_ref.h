// Plain double reference for ops/rope.h: q_embed = q·cos + rotate_half(q)·sin on the first rotary_dim
// elements of each head, written as transformers' apply_rotary_pos_emb. The angle is transformers' float32
// angle (hf_rope_angle); cos, sin and the rotation are in double.
#pragma once
#include <cstdint>
#include <vector>

namespace keel::ref {

// transformers' float32 angle for frequency i of a position:
// f32(f32(1 / f32(theta ** f32(f32(2i) / R))) · f32(position)).
double hf_rope_angle(double theta, int64_t rotary_dim, int64_t i, int64_t position);
// The same angle in exact arithmetic: position · theta^(−2i/R).
double exact_rope_angle(double theta, int64_t rotary_dim, int64_t i, int64_t position);

// x [T, H, D] (row-major), positions [T]. `hf_angles` picks hf_rope_angle, else exact_rope_angle.
std::vector<double> rope(const std::vector<double>& x, const std::vector<int64_t>& positions, int64_t H,
                         int64_t D, int64_t rotary_dim, double theta, bool hf_angles = true);

}  // namespace keel::ref
