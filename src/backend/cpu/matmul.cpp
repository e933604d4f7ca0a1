#include "backend/cpu/matmul.h"

#include <algorithm>

#include "core/tensor.h"

namespace keel::cpu {

namespace {

bool uses_panels(int64_t T) {
  return T >= kMatmulPanelMinRows;
}

// Workers used: one per share of the output columns, each share a multiple of 16 columns where out allows.
int64_t worker_count(int64_t out, int n_threads) {
  int64_t shares = (out + 15) / 16;
  return std::max<int64_t>(1, std::min<int64_t>(n_threads, shares));
}

// Floats of one worker's panel (0: none).
int64_t panel_floats(int64_t T, int64_t in, int32_t w_bits) {
  if (!uses_panels(T)) return 0;
  return kMatmulPanelRows * (w_bits > 0 ? in : matmul_pair_floats(in));
}

bool pair_order(const MatmulArgs& a) {
  return a.w_bits == 0 && a.w_dtype == DType::bf16;
}

// Floats of x in the pair order (0: not bf16 weights).
int64_t pair_x_floats(const MatmulArgs& a) {
  return pair_order(a) ? a.T * matmul_pair_floats(a.in) : 0;
}

}  // namespace

int64_t matmul_workspace_bytes(const MatmulArgs& a, int n_threads) {
  if (a.T == 0 || a.out == 0) return 0;
  return (worker_count(a.out, n_threads) * panel_floats(a.T, a.in, a.w_bits) + pair_x_floats(a)) * 4;
}

int packed_lanes(CpuIsa isa) {
  return isa >= CpuIsa::avx512 ? 16 : 8;
}

void dequantize_packed(CpuIsa isa, const PackedRow& r, int64_t n, float* out) {
  const int64_t L = packed_lanes(isa);
  if (isa >= CpuIsa::avx512) return dequantize_packed_avx512(r, n, out, L);
  if (isa == CpuIsa::avx2) return dequantize_packed_avx2(r, n, out, L);
  dequantize_packed_generic(r, n, out, L);
}

void matmul(CpuBackend& be, const MatmulArgs& a) {
  if (a.T == 0 || a.out == 0) return;
  const bool avx512 = be.isa() >= CpuIsa::avx512, avx2 = be.isa() == CpuIsa::avx2;
  // The VBMI build where the backend runs this CPU's best ISA and the CPU has VBMI (the op tests' lower
  // AVX-512 tier then runs the other; the same bits either way).
  auto* kernel = avx512 && be.isa() == cpu_isa() && cpu_vbmi() ? matmul_cols_avx512_vbmi
                 : avx512                                      ? matmul_cols_avx512
                 : avx2                                        ? matmul_cols_avx2
                                                               : matmul_cols_generic;
  auto* pair_x = avx512 ? pair_x_avx512 : avx2 ? pair_x_avx2 : pair_x_generic;
  const int64_t workers = worker_count(a.out, be.threads()->size());
  Tensor xpair;  // [T, matmul_pair_floats(in)] f32: x in the pair order (bf16 weights)
  if (pair_order(a)) {
    const int64_t n = matmul_pair_floats(a.in);
    xpair = Tensor::empty(be.pool(), DType::f32, {a.T, n}, "matmul x in pair order");
    float* xp = xpair.ptr<float>();
    auto rows = [&](int64_t begin, int64_t end, int) {
      for (int64_t t = begin; t < end; ++t)
        pair_x(reinterpret_cast<const float*>(a.x + t * a.x_row_bytes), a.in, xp + t * n);
    };
    if (uses_panels(a.T))
      be.threads()->parallel_for(a.T, rows);
    else
      rows(0, a.T, 0);
  }
  Tensor panels;  // [workers, panel_floats] f32 for prefill
  const int64_t floats = panel_floats(a.T, a.in, a.w_bits);
  if (floats > 0) panels = Tensor::empty(be.pool(), DType::f32, {workers, floats}, "matmul weight panels");
  const float* xp = pair_order(a) ? xpair.ptr<float>() : nullptr;
  // Worker w takes columns [w·out/workers, (w+1)·out/workers) rounded to 16; each computes its columns whole.
  be.threads()->parallel_for(workers, [&](int64_t begin, int64_t end, int) {
    for (int64_t w = begin; w < end; ++w) {
      int64_t o_begin = std::min(a.out, (a.out * w / workers + 15) / 16 * 16);
      int64_t o_end = w + 1 == workers ? a.out : std::min(a.out, (a.out * (w + 1) / workers + 15) / 16 * 16);
      float* panel = floats ? panels.ptr<float>() + w * floats : nullptr;
      if (o_begin < o_end) kernel(a, o_begin, o_end, panel, xp);
    }
  });
}

}  // namespace keel::cpu

namespace keel {

void CpuBackend::matmul(const MatmulArgs& a) {
  cpu::matmul(*this, a);
}

int64_t CpuBackend::matmul_workspace(const MatmulArgs& a) const {
  return cpu::matmul_workspace_bytes(a, workers());
}

}  // namespace keel
