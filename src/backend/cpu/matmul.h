// CPU kernels for y[T, out] = x[T, in] · W[out, in]ᵀ (+ bias[out]); x, y, bias f32; W f32, bf16 or f16 as
// stored.
//
// Numerics (decided): activations stay f32 and every product is an f32 FMA. bf16/f16 weights are widened to
// f32 (exactly) — in registers for a few rows (decode), or a panel of 64 weight rows at a time into
// per-worker scratch, packed for the register tile, for many rows (prefill; f32 weights are packed the same
// way). The AVX-512 BF16 dot product (vdpbf16ps) is not used: it would round x to bf16 (8 bits of mantissa),
// an error the reference fixtures' 1e-3 log-prob tolerance does not leave room for.
//
// Batch invariance: y[t, o] is one vector accumulator of the ISA's width L over k (lane j sums k ≡ j mod L in
// increasing k, the last partial step zero-padded), reduced by a fixed tree, plus bias. That order depends
// only on `in` and the backend's ISA — not on T, on which path ran, on tiling or on the thread split.
#pragma once
#include <cstdint>

#include "backend/cpu/cpu_backend.h"
#include "core/dtype.h"

namespace keel::cpu {

// MatmulArgs: backend/kernel_args.h (dense weights only here: supports() refuses packed ones).

// Rows at or above which weights are copied (widened) a packed panel at a time (below: read in place, widened
// in registers, no workspace).
constexpr int64_t kMatmulPanelMinRows = 8;
// Weight rows per panel at most; per-worker scratch is kMatmulPanelRows × round_up(in, 16) f32.
constexpr int64_t kMatmulPanelRows = 64;

void matmul(CpuBackend& be, const MatmulArgs& args);
// Exactly the bytes matmul() takes from the pool for these shapes on `n_threads` workers.
int64_t matmul_workspace_bytes(int64_t T, int64_t in, int64_t out, DType w_dtype, int n_threads);

// Per-ISA entry points (matmul_<isa>.cpp): y[t, o] for every t and o in [o_begin, o_end). `panel` is f32
// scratch of kMatmulPanelRows × round_up(in, 16) floats when T ≥ kMatmulPanelMinRows, else null.
void matmul_cols_generic(const MatmulArgs& a, int64_t o_begin, int64_t o_end, float* panel);
void matmul_cols_avx2(const MatmulArgs& a, int64_t o_begin, int64_t o_end, float* panel);
void matmul_cols_avx512(const MatmulArgs& a, int64_t o_begin, int64_t o_end, float* panel);

}  // namespace keel::cpu
