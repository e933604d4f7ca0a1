// CPU kernels for rotary position embeddings in transformers' layout (rotate_half: element i pairs with
// i + R/2 within the first R = rotary_dim elements of each head; the rest pass through).
// Angles follow transformers' float32 arithmetic exactly: inv_freq[i] = 1 / theta^(f32(2i) / R) in f32, angle
// = f32(inv_freq[i] · position); cos and sin of that f32 angle are taken in double and rounded to f32. The
// rotation is q·cos + rotate_half(q)·sin with each product rounded, as torch computes it (this file is built
// for baseline x86-64, so no FMA contraction).
#pragma once
#include <cstdint>

namespace keel::cpu {

// table [R]: cos(angle_0 .. angle_{R/2−1}) then sin(...), for one position.
void rope_cos_sin_row(int32_t position, const float* inv_freq, int64_t rotary_dim, float* table);
// One head of D elements: y = rotated x (y may equal x). cs: that token's table [R].
void rope_head(const float* x, float* y, int64_t head_dim, int64_t rotary_dim, const float* cs);

}  // namespace keel::cpu
