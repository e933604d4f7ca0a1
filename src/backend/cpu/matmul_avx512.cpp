// matmul with AVX-512 (matmul_v512.h's lanes; matmul_avx512_vbmi.cpp is the same with AVX512-VBMI). The
// target region covers the kernel template instances.
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/matmul.h"

// GCC 12's intrinsic headers self-initialize `__Y = __Y` (GCC bug 105593), which -Wuninitialized reports once
// the intrinsics are inlined.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// clang ignores `#pragma GCC target`; its own form gives every function of the region the same target.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")
#endif

#include "backend/cpu/matmul_tile.h"
#include "backend/cpu/matmul_v512.h"

namespace keel::cpu {
namespace {
using V = V512<false>;
}  // namespace

void matmul_cols_avx512(const MatmulArgs& a, int64_t o_begin, int64_t o_end, float* panel,
                        const float* xpair) {
  matmul_tile::matmul_cols<V>(a, o_begin, o_end, panel, xpair);
}

void pair_x_avx512(const float* x, int64_t in, float* xp) {
  matmul_tile::pair_x<V>(x, in, xp);
}

void dequantize_packed_avx512(const PackedRow& r, int64_t n, float* out, int64_t step) {
  matmul_tile::dequantize_packed<V>(r, n, out, step);
}

}  // namespace keel::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
