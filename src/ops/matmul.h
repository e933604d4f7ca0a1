// Linear layers: y[T, out] = x[T, in] · w[out, in]ᵀ (+ bias[out]).
// x, y, bias: f32. w: f32, bf16 or f16 in its stored HF layout (borrowed from the mmap, never upcast whole).
// Rows of x, w and y may be strided (views), but each row is contiguous; y must not overlap x.
// Batch invariant (docs/OPS.md): a row's result does not depend on T or the thread count.
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "core/tensor.h"

namespace keel::ops {

void matmul(Backend& be, const Tensor& x, const Tensor& w, Tensor& y);
void matmul(Backend& be, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y);

// Bytes matmul takes from the pool: on the CPU, per-worker f32 panels of 64 weight rows when T ≥ 8
// (min(n_threads, ⌈out/16⌉) × 64 × round_up(in, 16) × 4), else 0.
int64_t matmul_workspace_bytes(int64_t T, int64_t in, int64_t out, DType w_dtype, int n_threads);

}  // namespace keel::ops
