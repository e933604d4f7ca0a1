// Linear layers: y[T, out] = x[T, in] · Wᵀ (+ bias[out]) for a Weight W [out, in] (core/weight.h).
// x, y, bias: f32. W dense (f32, bf16 or f16 in its stored HF layout, borrowed from the mmap, never upcast
// whole) or packed (MLX affine; only backends with a packed kernel take it, others throw Error(unsupported)).
// Rows of x, W and y may be strided (views), but each row is contiguous; y must not overlap x.
// Batch invariant (docs/OPS.md): a row's result does not depend on T or the thread count.
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "core/tensor.h"
#include "core/weight.h"

namespace keel::ops {

void matmul(Backend& be, const Tensor& x, const Weight& w, Tensor& y);
void matmul(Backend& be, const Tensor& x, const Weight& w, const Tensor& bias, Tensor& y);

// Bytes matmul takes from be's pool for these sizes (the backend states it). The CPU's: per-worker f32
// panels of 64 weight rows when T ≥ 8 (min(threads, ⌈out/16⌉) × 64 × round_up(in, 16) × 4), else 0.
int64_t matmul_workspace_bytes(const Backend& be, int64_t T, int64_t in, int64_t out, const WeightFormat& w);

}  // namespace keel::ops
