// matmul with AVX-512 and AVX512-VBMI (Ice Lake, Sapphire Rapids, Zen 4 and later): matmul_avx512.cpp's
// kernels with the packed decode's 2- to 4-bit lookups by vpmultishiftqb (matmul_v512.h). Run only where the
// CPU has VBMI (matmul.cpp). The target region covers the kernel template instances.
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/matmul.h"

// GCC 12's intrinsic headers self-initialize `__Y = __Y` (GCC bug 105593), which -Wuninitialized reports once
// the intrinsics are inlined.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// clang ignores `#pragma GCC target`; its own form gives every function of the region the same target.
#if defined(__clang__)
#pragma clang attribute push( \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,fma,f16c")
#endif

#include "backend/cpu/matmul_tile.h"
#include "backend/cpu/matmul_v512.h"

namespace keel::cpu {
namespace {
using V = V512<true>;
}  // namespace

void matmul_cols_avx512_vbmi(const MatmulArgs& a, int64_t o_begin, int64_t o_end, float* panel,
                             const float* xpair) {
  matmul_tile::matmul_cols<V>(a, o_begin, o_end, panel, xpair);
}

}  // namespace keel::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
