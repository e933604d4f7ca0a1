#include "backend/cpu/cpu_backend.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/error.h"

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

bool CpuBackend::supports(Op, DType weight_dtype) const {
  return weight_dtype == DType::f32 || weight_dtype == DType::bf16 || weight_dtype == DType::f16;
}

namespace {
// Throws unless `t` is contiguous and covers `bytes` bytes; `what` names the call and the operand.
void check_span(const Tensor& t, int64_t bytes, const char* what) {
  if (!t.is_contiguous())
    throw_error(ErrorCode::invalid_argument, "{}: a non-contiguous tensor {}", what, t.shape_string());
  if (t.nbytes() != bytes)
    throw_error(ErrorCode::invalid_argument, "{}: {} bytes into/from a tensor {} of {} bytes", what, bytes,
                t.shape_string(), t.nbytes());
  if (bytes > 0 && !t.data()) throw_error(ErrorCode::invalid_argument, "{}: a tensor without storage", what);
}
}  // namespace

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
  check_span(src, src.nbytes(), "copy (source)");
  check_span(dst, src.nbytes(), "copy (destination)");
  if (src.nbytes() > 0) std::memmove(dst.data(), src.data(), static_cast<size_t>(src.nbytes()));
}

void CpuBackend::upload(const void* host, int64_t bytes, Tensor& dst) {
  check_span(dst, bytes, "upload");
  if (bytes > 0) std::memcpy(dst.data(), host, static_cast<size_t>(bytes));
}

void CpuBackend::download(const Tensor& src, void* host, int64_t bytes) {
  check_span(src, bytes, "download");
  if (bytes > 0) std::memcpy(host, src.data(), static_cast<size_t>(bytes));
}

void CpuBackend::fill_zero(Tensor& dst) {
  check_span(dst, dst.nbytes(), "fill_zero");
  if (dst.nbytes() > 0) std::memset(dst.data(), 0, static_cast<size_t>(dst.nbytes()));
}

}  // namespace keel
