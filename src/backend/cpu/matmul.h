// CPU kernels for y[T, out] = x[T, in] · W[out, in]ᵀ (+ bias[out]); x, y, bias f32; W f32, bf16 or f16 as
// stored, or packed (MLX affine, core/weight.h: 2, 3, 4, 5, 6 or 8 bits, groups of 32, 64 or 128).
//
// Numerics (decided): activations stay f32 and every product is an f32 FMA. bf16/f16 weights are widened to
// f32 (exactly) — in registers for a few rows (decode), or a panel of 64 weight rows at a time into
// per-worker scratch, packed for the register tile, for many rows (prefill; f32 weights are packed the same
// way). The AVX-512 BF16 dot product (vdpbf16ps) is not used: it would round x to bf16 (8 bits of mantissa),
// an error the reference fixtures' 1e-3 log-prob tolerance does not leave room for (and x split into three
// bf16 parts to keep it exact runs at 0.61× the f32 FMAs on this Zen 5: 441 against 240 GFLOP/s a core).
//
// Packed weights are dequantized (W = scale·q + bias in f32: a product, then a sum), never the whole matrix:
// below kMatmulPanelMinRows rows of x (decode) NR rows at a time in registers, L elements per step, each used
// at once (the packed words stream from memory); above, kMatmulPanelRows rows at a time into the same
// per-worker panel as bf16 weights, then the panel kernel. Both give the values and the order below.
//
// Batch invariance: y[t, o] is one vector accumulator of the ISA's width L over k, reduced by a fixed tree,
// plus bias. f32/f16/packed weights: lane j sums k ≡ j mod L in increasing k, the last partial step
// zero-padded. bf16 weights, the pair order: k goes in blocks of 2L, lane j taking block b's elements 2L·b +
// 2j then 2L·b + 2j + 1, zero-padded to matmul_pair_floats(in) — a bf16 is the high half of its f32, so a
// 2L-element load splits into the even and the odd elements with a shift and a mask, no shuffle (Qwen3-0.6B
// shape decode 1.11× the widening shuffle on this Zen 5; a lone GEMV streamed at the memory's rate either way
// on the quiet machine, 1.2–1.7× faster beside other load), and x is put in the same order once per call
// (workspace). That order depends only on `in`, the weight type and the backend's ISA — not on T, on which
// path ran, on tiling or on the thread split.
#pragma once
#include <cstdint>

#include "backend/cpu/cpu_backend.h"
#include "core/dtype.h"

namespace keel::cpu {

// MatmulArgs: backend/kernel_args.h.

// Rows at or above which weights are copied (widened) a packed panel at a time (below: read in place, widened
// in registers, no workspace).
constexpr int64_t kMatmulPanelMinRows = 8;
// Weight rows per panel at most; per-worker scratch is kMatmulPanelRows × round_up(in, 16) f32.
constexpr int64_t kMatmulPanelRows = 64;

// Floats of a row of x in the pair order (bf16 weights): `in` rounded up to 32 (2L divides 32 on every ISA).
constexpr int64_t matmul_pair_floats(int64_t in) {
  return (in + 31) / 32 * 32;
}

void matmul(CpuBackend& be, const MatmulArgs& args);
// Exactly the bytes matmul() takes from the pool for these shapes (args' T, in, out, w_dtype, w_bits) on
// `n_threads` workers: the prefill panels (packed weights: `in` floats per row, a multiple of the group
// size), and for bf16 weights x in the pair order (T × matmul_pair_floats(in) floats).
int64_t matmul_workspace_bytes(const MatmulArgs& args, int n_threads);

// Per-ISA entry points (matmul_<isa>.cpp): y[t, o] for every t and o in [o_begin, o_end). `panel` is f32
// scratch of kMatmulPanelRows × matmul_pair_floats(in) floats when T ≥ kMatmulPanelMinRows, else null;
// `xpair` (bf16 weights only, else null) is x in the pair order, pair_x_<isa>'s rows matmul_pair_floats(in)
// floats apart.
void matmul_cols_generic(const MatmulArgs& a, int64_t o_begin, int64_t o_end, float* panel,
                         const float* xpair);
void matmul_cols_avx2(const MatmulArgs& a, int64_t o_begin, int64_t o_end, float* panel, const float* xpair);
void matmul_cols_avx512(const MatmulArgs& a, int64_t o_begin, int64_t o_end, float* panel,
                        const float* xpair);
// matmul_cols_avx512 compiled with AVX512-VBMI (its packed decode's lookups): only where cpu_vbmi().
void matmul_cols_avx512_vbmi(const MatmulArgs& a, int64_t o_begin, int64_t o_end, float* panel,
                             const float* xpair);
// One row of x (`in` floats) into the pair order of that ISA's L (matmul_pair_floats(in) floats,
// zero-padded).
void pair_x_generic(const float* x, int64_t in, float* xp);
void pair_x_avx2(const float* x, int64_t in, float* xp);
void pair_x_avx512(const float* x, int64_t in, float* xp);

// One packed row (MLX affine) dequantized to f32: out[k] = scale[k / group]·q_k + bias[k / group] for k in
// [0, n), L elements at a time, each L-block at out + (k / L)·step (step = L: contiguous; the panel's
// interleave otherwise). L is the ISA's width (8 for generic and avx2, 16 for avx512). With bf16/f16 scales
// every ISA gives the same values (scale·q is exact in f32); with f32 scales the compiler may fuse the
// product and the sum where the ISA has FMA (the same on every path of one ISA, so batch invariance holds).
struct PackedRow {
  const uint32_t* words = nullptr;
  const char* scales = nullptr;
  const char* biases = nullptr;
  DType scale_dtype = DType::f32;
  int32_t bits = 0, group_size = 0;
};
void dequantize_packed_generic(const PackedRow& r, int64_t n, float* out, int64_t step);
void dequantize_packed_avx2(const PackedRow& r, int64_t n, float* out, int64_t step);
void dequantize_packed_avx512(const PackedRow& r, int64_t n, float* out, int64_t step);
int packed_lanes(CpuIsa isa);  // L of dequantize_packed_<isa>
void dequantize_packed(CpuIsa isa, const PackedRow& r, int64_t n, float* out);  // contiguous

}  // namespace keel::cpu
