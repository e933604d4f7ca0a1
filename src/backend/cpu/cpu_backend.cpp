#include "backend/cpu/cpu_backend.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

#include "backend/host_memory.h"

namespace keel {

namespace {
CpuIsa detect_isa() {
  __builtin_cpu_init();
  CpuIsa isa = CpuIsa::generic;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) isa = CpuIsa::avx2;
  if (isa == CpuIsa::avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    isa = CpuIsa::avx512;
  if (isa == CpuIsa::avx512 && __builtin_cpu_supports("avx512bf16")) isa = CpuIsa::avx512_bf16;
  if (const char* cap = std::getenv("KEEL_CPU_ISA")) {
    std::string_view c(cap);
    CpuIsa want = c == "generic"  ? CpuIsa::generic
                  : c == "avx2"   ? CpuIsa::avx2
                  : c == "avx512" ? CpuIsa::avx512
                                  : CpuIsa::avx512_bf16;
    if (want < isa) isa = want;
  }
  return isa;
}
}  // namespace

CpuIsa cpu_isa() {
  static const CpuIsa isa = detect_isa();
  return isa;
}

bool cpu_vbmi() {
  static const bool vbmi = cpu_isa() >= CpuIsa::avx512 && __builtin_cpu_supports("avx512vbmi");
  return vbmi;
}

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::generic:
      return "generic";
    case CpuIsa::avx2:
      return "avx2";
    case CpuIsa::avx512:
      return "avx512";
    case CpuIsa::avx512_bf16:
      return "avx512-bf16";
  }
  return "?";
}

CpuBackend::CpuBackend(MemoryPool& pool, int n_threads, CpuIsa isa)
    : pool_(pool), isa_(isa < cpu_isa() ? isa : cpu_isa()), threads_(n_threads) {}

std::string CpuBackend::name() const {
  return fmt::format("cpu ({}, {} threads)", cpu_isa_name(isa_), threads_.size());
}

// Dense f32/bf16/f16 weights everywhere; packed (u32, MLX affine) ones in matmul, the embedding lookup and
// the MoE experts (whose products are matmuls).
bool CpuBackend::supports(Op op, DType dtype) const {
  if (dtype == DType::u32) return op == Op::matmul || op == Op::embedding || op == Op::moe;
  return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16;
}

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
  host_memory::copy(src, dst);
}

void CpuBackend::upload(const void* host, int64_t bytes, Tensor& dst) {
  host_memory::upload(host, bytes, dst);
}

void CpuBackend::download(const Tensor& src, void* host, int64_t bytes) {
  host_memory::download(src, host, bytes);
}

void CpuBackend::fill_zero(Tensor& dst) {
  host_memory::fill_zero(dst);
}

}  // namespace keel
