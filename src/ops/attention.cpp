#include "ops/attention.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "ops/op_check.h"
#include "ops/view_access.h"

namespace keel::ops {

namespace {
constexpr const char* kOp = "attention";
}  // namespace

int64_t attention_workspace_bytes(const Backend& be, int64_t T, int64_t n_q, int64_t n_kv, int64_t D,
                                  int64_t Dv, DType kv_cache) {
  AttentionArgs a;
  a.kv_dtype = kv_cache;
  a.T = T, a.n_q = n_q, a.n_kv = n_kv, a.D = D, a.Dv = Dv, a.key_tile = kAttentionKeyTile,
  a.query_tile = kAttentionQueryTile;
  return be.attention_workspace(a);
}

void attention(Backend& be, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, Tensor& out,
               const AttentionParams& p) {
  check_tensor(kOp, "q", q, {DType::f32}, {kAnyDim, kAnyDim, kAnyDim});
  check_tensor(kOp, "k_cache", k_cache, {DType::f32, DType::f16}, {kAnyDim, kAnyDim, q.dim(2)});
  const int64_t T = q.dim(0), n_q = q.dim(1), D = q.dim(2), capacity = k_cache.dim(0), n_kv = k_cache.dim(1);
  check_tensor(kOp, "v_cache", v_cache, {k_cache.dtype()}, {capacity, n_kv, kAnyDim});
  const int64_t Dv = v_cache.dim(2);
  check_tensor(kOp, "out", out, {DType::f32}, {T, n_q, Dv});
  if (n_kv < 1 || n_q % n_kv != 0)
    throw_error(ErrorCode::invalid_argument, "{}: {} query heads do not share {} KV heads evenly", kOp, n_q,
                n_kv);
  if (D < 1 || D > 512 || Dv < 1 || Dv > 512)
    throw_error(ErrorCode::invalid_argument, "{}: head_dim {} / value head_dim {} outside 1…512", kOp, D, Dv);
  if (p.offset < 0 || p.offset + T > capacity)
    throw_error(ErrorCode::invalid_argument,
                "{}: {} queries at offset {} need {} cache rows, the cache holds {}", kOp, T, p.offset,
                p.offset + T, capacity);
  require_support(be, Op::attention, k_cache.dtype(), kOp);  // (the cache's dtype)
  if (T == 0) return;

  AttentionArgs a;
  a.T = T, a.n_q = n_q, a.n_kv = n_kv, a.D = D, a.Dv = Dv, a.offset = p.offset;
  a.key_tile = kAttentionKeyTile, a.query_tile = kAttentionQueryTile;
  a.scale = p.scale.value_or(1.0f / std::sqrt(static_cast<float>(D)));
  a.q = q.ptr<float>(), a.q_st = stride_floats(kOp, "q", q, 0), a.q_sh = stride_floats(kOp, "q", q, 1);
  a.kv_dtype = k_cache.dtype();
  a.k = k_cache.data(), a.k_st = stride_elements(kOp, "k_cache", k_cache, 0),
  a.k_sh = stride_elements(kOp, "k_cache", k_cache, 1);
  a.v = v_cache.data(), a.v_st = stride_elements(kOp, "v_cache", v_cache, 0),
  a.v_sh = stride_elements(kOp, "v_cache", v_cache, 1);
  a.out = out.ptr<float>(), a.o_st = stride_floats(kOp, "out", out, 0),
  a.o_sh = stride_floats(kOp, "out", out, 1);
  be.attention(a);
}

void store_kv_rows(Backend& be, const Tensor& rows, Tensor& cache_rows) {
  constexpr const char* op = "store_kv_rows";
  if (rows.dtype() != DType::f32 || (cache_rows.dtype() != DType::f32 && cache_rows.dtype() != DType::f16))
    throw_error(ErrorCode::invalid_argument, "{}: f32 rows into an f32 or f16 cache, not {} into {}", op,
                dtype_name(rows.dtype()), dtype_name(cache_rows.dtype()));
  if (rows.numel() != cache_rows.numel() || !rows.is_contiguous() || !cache_rows.is_contiguous())
    throw_error(ErrorCode::invalid_argument,
                "{}: rows {} and cache rows {} must be contiguous, the same size", op, rows.shape_string(),
                cache_rows.shape_string());
  if (cache_rows.dtype() == DType::f32) return be.copy(rows, cache_rows);
  require_support(be, Op::convert, cache_rows.dtype(), op);
  ConvertArgs a;
  a.src = rows.ptr<float>(), a.dst = cache_rows.data(), a.dst_dtype = cache_rows.dtype(), a.n = rows.numel();
  be.convert(a);
}

}  // namespace keel::ops
