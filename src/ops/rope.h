// Rotary position embeddings as transformers applies them (rotate_half layout; partial rotary: only the first
// rotary_dim elements of each head rotate). Positions are per token, so a prefill chunk at offset o passes
// o, o + 1, ...; text-only Qwen3.5 M-RoPE (all three position axes equal) is this same rotation.
// The cos/sin table of a step can be built once and applied to q and k of every layer.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "core/tensor.h"

namespace keel::ops {

struct RopeParams {
  double theta = 10000.0;  // rope_theta
  int64_t rotary_dim = 0;  // even, ≤ head_dim: rope_rotary_dim(head_dim, partial_rotary_factor)
};

// transformers: int(head_dim · partial_rotary_factor).
int64_t rope_rotary_dim(int64_t head_dim, double partial_rotary_factor);

// inv_freq[0, R/2) as transformers computes it in float32: 1 / theta^(f32(2i) / R), every step in f32.
std::vector<float> rope_inv_freq(double theta, int64_t rotary_dim);

// cos_sin [T, 2·inv_freq.size()] f32: row t = cos of f32(inv_freq[i] · positions[t]) for each i, then their
// sin (models/blocks/rope.h passes its scaled frequencies). positions: i32 [T], ≥ 0. host_positions: the
// same positions in host memory when the caller has them: checked instead of a download of `positions`
// (which on a device waits for the stream).
void rope_cos_sin(Backend& be, const Tensor& positions, std::span<const float> inv_freq, Tensor& cos_sin,
                  std::span<const int32_t> host_positions = {});
// cos_sin [T, rotary_dim] f32: row t = cos of the rotary_dim/2 angles of positions[t], then their sin.
// positions: i32 [T].
void rope_cos_sin(Backend& be, const Tensor& positions, Tensor& cos_sin, const RopeParams& p);
// x, out: f32 [T, H, head_dim] (out may be x); cos_sin from rope_cos_sin. No workspace.
void rope(Backend& be, const Tensor& x, const Tensor& cos_sin, Tensor& out);
// Both in one call: builds the table in workspace.
void rope(Backend& be, const Tensor& x, const Tensor& positions, Tensor& out, const RopeParams& p);

// Workspace of the one-call form (the table, T × rotary_dim f32); the table form takes none.
constexpr int64_t rope_workspace_bytes(int64_t T, int64_t rotary_dim) {
  return T * rotary_dim * 4;
}

}  // namespace keel::ops
