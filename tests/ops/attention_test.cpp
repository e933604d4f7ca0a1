// ops::attention against a float64 softmax written plainly (ops/reference/attention_ref.h); chunked prefill
// over the cache vs one shot and a row alone vs in a chunk (bitwise: the op is batch invariant); thread
// invariance; workspace measured vs planned and flat in kv_len; cache offsets past 2^32 bytes.
#include "ops/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "op_harness.h"
#include "ops/reference/attention_ref.h"

using namespace keel;
using namespace keel::testing;

namespace {

// fp32 dot products of up to 512 terms and online-softmax rescaling vs float64: |Δ| ≤ 2e-6·max|ref| +
// 2e-5·|ref| (measured worst ~3e-7·max|ref|; a key off by one position or a wrong KV head fails by far more).
constexpr double kAtolScale = 2e-6, kRtol = 2e-5;

struct Case {
  int64_t T, n_q, n_kv, D, Dv, offset;
};

// A cache with `capacity` rows whose rows past kv_len are NaN, so reading past the causal end fails loudly.
struct Cache {
  Tensor k, v;
  Cache(OpBackend& ob, TestRng& rng, int64_t capacity, int64_t kv_len, int64_t n_kv, int64_t D, int64_t Dv) {
    k = random_tensor(ob, rng, DType::f32, {capacity, n_kv, D}, 1.0, "k cache");
    v = random_tensor(ob, rng, DType::f32, {capacity, n_kv, Dv}, 1.0, "v cache");
    for (int64_t i = kv_len * n_kv * D; i < k.numel(); ++i) k.ptr<float>()[i] = std::nanf("");
    for (int64_t i = kv_len * n_kv * Dv; i < v.numel(); ++i) v.ptr<float>()[i] = std::nanf("");
  }
};

std::vector<double> reference(const Case& c, const Tensor& q, const Cache& cache, double scale) {
  const int64_t kv_len = c.offset + c.T;
  return ref::attention(c.T, c.n_q, c.n_kv, c.D, c.Dv, c.offset, scale, values(q),
                        values(cache.k.slice(0, 0, kv_len)), values(cache.v.slice(0, 0, kv_len)));
}

OpBackend& best_with_threads(int threads) {
  for (OpBackend* ob : cpu_op_backends())
    if (ob->threads == threads && ob->cpu_isa == cpu_isa()) return *ob;
  return *cpu_op_backends().back();
}

}  // namespace

TEST(Attention, MatchesReference) {
  KEEL_TEST_RNG(rng);
  const Case cases[] = {
      {1, 2, 2, 64, 64, 0},      // decode of the first token: one key
      {1, 8, 2, 128, 128, 200},  // decode, GQA 4, several key tiles
      {37, 8, 1, 64, 64, 0},     // prefill from empty, GQA 8, odd length
      {70, 4, 4, 256, 256, 59},  // chunk at an offset, starting mid-tile, GQA 1
      {3, 2, 1, 512, 512, 130},  // head_dim 512, tiny T
      {21, 6, 3, 72, 40, 5},     // head dims that are not multiples of the vector width, D ≠ Dv
      // decode and a one-tile step over long caches (CUDA: keys split into runs, then combined)
      {1, 8, 2, 128, 128, 3000},
      {16, 4, 2, 64, 48, 1500},
      {5, 16, 2, 256, 256, 700},
      // prefill chunks of several 64-row blocks over a long cache (CUDA: the tensor-core kernel), the last
      // block part-full; head_dim 256 (two value slabs on CUDA)
      {200, 4, 2, 128, 128, 1000},
      {130, 4, 1, 256, 256, 300},
  };
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (const Case& c : cases) {
      SCOPED_TRACE(::testing::Message() << "T=" << c.T << " n_q=" << c.n_q << " n_kv=" << c.n_kv
                                        << " D=" << c.D << " Dv=" << c.Dv << " offset=" << c.offset);
      Cache cache(*ob, rng, c.offset + c.T + 3, c.offset + c.T, c.n_kv, c.D, c.Dv);
      Tensor q = random_tensor(*ob, rng, DType::f32, {c.T, c.n_q, c.D}, 3.0);  // peaked softmax rows
      Tensor out = nan_tensor(*ob, {c.T, c.n_q, c.Dv});
      ops::attention(ob->be(), q, cache.k, cache.v, out, {c.offset, std::nullopt});
      std::vector<double> ref = reference(c, q, cache, 1.0 / std::sqrt(static_cast<double>(c.D)));
      EXPECT_TRUE(all_close(out, ref, kAtolScale * max_abs(ref), kRtol));
    }
  }
}

TEST(Attention, ExplicitScaleAndStridedQuery) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *op_backends().front();
  const Case c{9, 4, 2, 32, 32, 11};
  Cache cache(ob, rng, 20, 20, c.n_kv, c.D, c.Dv);
  // q as the query half of a [T, n_q, 2·D] projection (qwen3_5 puts the gate beside each head's query).
  Tensor qg = random_tensor(ob, rng, DType::f32, {c.T, c.n_q, 2 * c.D}, 2.0);
  Tensor q = qg.strided_view({c.T, c.n_q, c.D}, {qg.stride_bytes(0), qg.stride_bytes(1), 4});
  Tensor out = nan_tensor(ob, {c.T, c.n_q, c.Dv});
  ops::attention(ob.be(), q, cache.k, cache.v, out, {c.offset, 0.3f});
  std::vector<double> ref = reference(c, q, cache, 0.3f);
  EXPECT_TRUE(all_close(out, ref, kAtolScale * max_abs(ref), kRtol));
}

// Prefill in chunks over the cache (lengths not multiples of the tiles, a single token among them) gives the
// same bits as one shot, and a row computed alone (decode-style, T = 1) the same bits as inside a chunk.
TEST(Attention, ChunkedPrefillAndLoneRowsEqualOneShotBitwise) {
  KEEL_TEST_RNG(rng);
  const int64_t L = 150, n_q = 8, n_kv = 2, D = 128;
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Cache cache(*ob, rng, L, L, n_kv, D, D);
    Tensor q = random_tensor(*ob, rng, DType::f32, {L, n_q, D}, 3.0);
    Tensor whole = nan_tensor(*ob, {L, n_q, D});
    ops::attention(ob->be(), q, cache.k, cache.v, whole, {0, std::nullopt});

    Tensor chunked = nan_tensor(*ob, {L, n_q, D});
    int64_t o = 0;
    for (int64_t len : {23, 1, 64, 17, 45}) {
      Tensor out = chunked.slice(0, o, len);
      ops::attention(ob->be(), q.slice(0, o, len), cache.k, cache.v, out, {o, std::nullopt});
      o += len;
    }
    ASSERT_EQ(o, L);
    EXPECT_TRUE(bitwise_equal(chunked, whole));

    for (int64_t i : {int64_t{0}, int64_t{63}, int64_t{64}, int64_t{100}, L - 1}) {
      Tensor row = nan_tensor(*ob, {1, n_q, D});
      ops::attention(ob->be(), q.slice(0, i, 1), cache.k, cache.v, row, {i, std::nullopt});
      EXPECT_TRUE(bitwise_equal(row, whole.slice(0, i, 1))) << "row " << i;
    }
    std::vector<double> ref = reference({L, n_q, n_kv, D, D, 0}, q, cache, 1.0 / std::sqrt(double(D)));
    EXPECT_TRUE(all_close(whole, ref, kAtolScale * max_abs(ref), kRtol));
  }
}

// An f16 cache (--cache-type f16): the same op over K and V as stored, widened exactly — against the float64
// reference on those f16 values, and batch invariant as the f32 cache is. A backend whose attention reads f32
// only would refuse it with Error(unsupported) before any work (every backend here reads f16).
// Two head ratios: 4 query heads a KV head (a lone row's heads walk a key tile together) and 16 (four
// groups of 4 walk each widened tile), so a kernel that treats the two differently is checked on both.
TEST(Attention, F16CacheMatchesReferenceAndIsBatchInvariant) {
  KEEL_TEST_RNG(rng);
  const int64_t L = 150, n_kv = 2, D = 128;
  for (const int64_t n_q : {int64_t{8}, int64_t{32}})
    for (OpBackend* ob : op_backends()) {
      SCOPED_TRACE(ob->name + " n_q " + std::to_string(n_q));
      Tensor k = random_tensor(*ob, rng, DType::f16, {L, n_kv, D}, 1.0, "k cache");
      Tensor v = random_tensor(*ob, rng, DType::f16, {L, n_kv, D}, 1.0, "v cache");
      Tensor q = random_tensor(*ob, rng, DType::f32, {L, n_q, D}, 3.0);
      Tensor whole = nan_tensor(*ob, {L, n_q, D});
      if (!ob->be().supports(Op::attention, DType::f16)) {
        try {
          ops::attention(ob->be(), q, k, v, whole, {0, std::nullopt});
          ADD_FAILURE() << "an f16 cache was taken";
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
        }
        continue;
      }
      ops::attention(ob->be(), q, k, v, whole, {0, std::nullopt});
      const std::vector<double> ref =
          ref::attention(L, n_q, n_kv, D, D, 0, 1.0 / std::sqrt(double(D)), values(q), values(k), values(v));
      EXPECT_TRUE(all_close(whole, ref, kAtolScale * max_abs(ref), kRtol));
      Tensor chunked = nan_tensor(*ob, {L, n_q, D});
      int64_t o = 0;
      for (int64_t len : {23, 1, 64, 17, 45}) {
        Tensor out = chunked.slice(0, o, len);
        ops::attention(ob->be(), q.slice(0, o, len), k, v, out, {o, std::nullopt});
        o += len;
      }
      EXPECT_TRUE(bitwise_equal(chunked, whole));
      for (int64_t i : {int64_t{0}, int64_t{64}, L - 1}) {
        Tensor row = nan_tensor(*ob, {1, n_q, D});
        ops::attention(ob->be(), q.slice(0, i, 1), k, v, row, {i, std::nullopt});
        EXPECT_TRUE(bitwise_equal(row, whole.slice(0, i, 1))) << "row " << i;
      }
    }
}

// The f16 cache over the shapes MatchesReference walks (CUDA: the tensor-core kernel over f16 tiles with
// head_dim 256 in two value slabs and D ≠ Dv, aligned or not, the grouped decode kernel over split runs, the
// tile kernel for head_dim 512), against the float64 reference on the same f16 values.
TEST(Attention, F16CacheShapesMatchReference) {
  KEEL_TEST_RNG(rng);
  const Case cases[] = {
      {1, 2, 2, 64, 64, 0},
      {1, 8, 2, 128, 128, 200},
      {37, 8, 1, 64, 64, 0},
      {70, 4, 4, 256, 256, 59},
      {3, 2, 1, 512, 512, 130},
      {21, 6, 3, 72, 40, 5},
      {1, 8, 2, 128, 128, 3000},
      {16, 4, 2, 64, 48, 1500},
      {5, 16, 2, 256, 256, 700},
      {200, 4, 2, 128, 128, 1000},
      {130, 4, 1, 256, 256, 300},
      // decode over long caches, the query heads of a KV head together (CUDA: the grouped kernel): 16 heads
      // a KV head (the Nemotron-H shape), 8 at head_dim 256 (Qwen3.5), rows of two positions in one 16-row
      // tile (12 heads a KV head, T = 3), 16 positions of 8 heads (eight row tiles a KV head)
      {1, 32, 2, 128, 128, 5000},
      {1, 16, 2, 256, 256, 4100},
      {3, 12, 1, 128, 64, 1000},
      {16, 8, 2, 128, 128, 600},
  };
  for (OpBackend* ob : op_backends()) {
    if (!ob->be().supports(Op::attention, DType::f16)) continue;
    SCOPED_TRACE(ob->name);
    for (const Case& c : cases) {
      SCOPED_TRACE(::testing::Message() << "T=" << c.T << " n_q=" << c.n_q << " n_kv=" << c.n_kv
                                        << " D=" << c.D << " Dv=" << c.Dv << " offset=" << c.offset);
      const int64_t L = c.offset + c.T;
      Tensor k = random_tensor(*ob, rng, DType::f16, {L + 3, c.n_kv, c.D}, 1.0, "k cache");
      Tensor v = random_tensor(*ob, rng, DType::f16, {L + 3, c.n_kv, c.Dv}, 1.0, "v cache");
      Tensor q = random_tensor(*ob, rng, DType::f32, {c.T, c.n_q, c.D}, 3.0);
      Tensor out = nan_tensor(*ob, {c.T, c.n_q, c.Dv});
      ops::attention(ob->be(), q, k, v, out, {c.offset, std::nullopt});
      const std::vector<double> ref =
          ref::attention(c.T, c.n_q, c.n_kv, c.D, c.Dv, c.offset, 1.0 / std::sqrt(double(c.D)), values(q),
                         values(k.slice(0, 0, L)), values(v.slice(0, 0, L)));
      EXPECT_TRUE(all_close(out, ref, kAtolScale * max_abs(ref), kRtol));
    }
  }
}

// store_kv_rows into an f16 cache rounds as IEEE binary16 does (the compiler's _Float16 conversion is the
// oracle): to nearest, ties to even, past the largest finite value to ±inf, subnormals kept, NaN stays NaN;
// into an f32 cache it copies.
TEST(Attention, StoreKvRowsRoundsToF16AsIeeeDoes) {
  KEEL_TEST_RNG(rng);
  std::vector<float> x = {
      0.0f,          -0.0f,   1.0f,  -2.5f, 65504.0f,           65519.0f,           65520.0f,
      -1e9f,         1e-7f,   3e-8f, 1e-9f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 0.1f,
      std::nanf(""), 5.96e-8f};
  while (x.size() < 1000) x.push_back(static_cast<float>(rng.uniform(-70000, 70000) * rng.uniform()));
  const int64_t n = static_cast<int64_t>(x.size());
  int checked = 0;
  for (OpBackend* ob : op_backends()) {
    if (!ob->be().host_addressable() || !ob->be().supports(Op::convert, DType::f16)) continue;
    SCOPED_TRACE(ob->name);
    ++checked;
    Tensor rows = Tensor::empty(ob->pool(), DType::f32, {n}, "rows");
    std::copy(x.begin(), x.end(), rows.ptr<float>());
    Tensor half = Tensor::empty(ob->pool(), DType::f16, {n}, "f16 cache rows");
    ops::store_kv_rows(ob->be(), rows, half);
    for (int64_t i = 0; i < n; ++i) {
      const _Float16 want = static_cast<_Float16>(x[static_cast<size_t>(i)]);
      uint16_t want_bits = 0;
      std::memcpy(&want_bits, &want, 2);
      const uint16_t got = half.ptr<uint16_t>()[i];
      if (want != want)  // NaN: any NaN
        EXPECT_TRUE((got & 0x7c00) == 0x7c00 && (got & 0x03ff) != 0) << "element " << i;
      else
        EXPECT_EQ(got, want_bits) << "element " << i << ": " << x[static_cast<size_t>(i)];
    }
    Tensor full = Tensor::empty(ob->pool(), DType::f32, {n}, "f32 cache rows");
    ops::store_kv_rows(ob->be(), rows, full);
    EXPECT_EQ(std::memcmp(full.data(), rows.data(), static_cast<size_t>(n) * 4), 0);
  }
  EXPECT_GE(checked, 2);  // the reference backend and the CPU's
}

TEST(Attention, ThreadCountDoesNotChangeBits) {
  KEEL_TEST_RNG(rng);
  OpBackend& one = best_with_threads(1);
  OpBackend& three = best_with_threads(3);
  ASSERT_NE(&one, &three);
  for (int64_t T : {1, 50}) {
    Cache cache(one, rng, 90, 90, 2, 64, 64);
    Tensor q = random_tensor(one, rng, DType::f32, {T, 6, 64}, 3.0);
    Tensor a = nan_tensor(one, {T, 6, 64}), b = nan_tensor(one, {T, 6, 64});
    ops::attention(one.be(), q, cache.k, cache.v, a, {90 - T, std::nullopt});
    ops::attention(three.be(), q, cache.k, cache.v, b, {90 - T, std::nullopt});
    EXPECT_TRUE(bitwise_equal(a, b));
  }
}

// The pool's peak is the plan, and it is the same for a chunk over 100 cached keys and over 3000 (an f16
// cache's plan holds each worker's widened key tile too).
TEST(Attention, WorkspaceIsPlannedAndFlatInKvLen) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    for (DType kv : {DType::f32, DType::f16}) {
      if (!ob->be().supports(Op::attention, kv)) continue;
      SCOPED_TRACE(ob->name + " " + std::string(dtype_name(kv)));
      std::vector<int64_t> measured;
      for (int64_t offset : {100, 3000}) {
        for (int64_t T : {1, 40}) {
          Tensor k = random_tensor(*ob, rng, kv, {offset + T, 1, 64}),
                 v = random_tensor(*ob, rng, kv, {offset + T, 1, 64});
          Tensor q = random_tensor(*ob, rng, DType::f32, {T, 4, 64});
          Tensor out = nan_tensor(*ob, {T, 4, 64});
          int64_t peak = pool_peak_during(ob->pool(), [&] {
            ops::attention(ob->be(), q, k, v, out, {offset, std::nullopt});
          });
          EXPECT_TRUE(workspace_ok(peak, ops::attention_workspace_bytes(ob->be(), T, 4, 1, 64, 64, kv)))
              << "T=" << T;
          measured.push_back(peak);
        }
      }
      EXPECT_EQ(measured[0], measured[2]);
      EXPECT_EQ(measured[1], measured[3]);
    }
  }
}

// Cache rows 5 GiB apart: the last row sits 10 GiB in, 2.5·2^30 floats, so element offsets past 2^31 must not
// wrap (a 32-bit offset would land on a PROT_NONE page or the wrong row).
TEST(Attention, CacheOffsetsPast32Bits) {
  KEEL_TEST_RNG(rng);
  const int64_t stride = int64_t{5} << 30, rows = 3, D = 64;
  SparseArena arena_k(stride * rows), arena_v(stride * rows);
  if (!arena_k.ok() || !arena_v.ok()) GTEST_SKIP() << "no address space for the sparse arena";
  OpBackend& ob = *cpu_op_backends().back();
  std::vector<double> kv_k, kv_v;
  for (int64_t r = 0; r < rows; ++r) {
    float* kr = reinterpret_cast<float*>(arena_k.commit(r * stride, D * 4));
    float* vr = reinterpret_cast<float*>(arena_v.commit(r * stride, D * 4));
    for (int64_t d = 0; d < D; ++d) {
      kv_k.push_back(kr[d] = static_cast<float>(rng.uniform()));
      kv_v.push_back(vr[d] = static_cast<float>(rng.uniform()));
    }
  }
  Tensor k =
      Tensor::borrow(arena_k.base(), DType::f32, {rows, 1, D}).strided_view({rows, 1, D}, {stride, D * 4, 4});
  Tensor v =
      Tensor::borrow(arena_v.base(), DType::f32, {rows, 1, D}).strided_view({rows, 1, D}, {stride, D * 4, 4});
  Tensor q = random_tensor(ob, rng, DType::f32, {1, 2, D}, 3.0);
  Tensor out = nan_tensor(ob, {1, 2, D});
  ops::attention(ob.be(), q, k, v, out, {rows - 1, std::nullopt});
  std::vector<double> ref = ref::attention(1, 2, 1, D, D, rows - 1, 1.0 / 8.0, values(q), kv_k, kv_v);
  EXPECT_TRUE(all_close(out, ref, kAtolScale * max_abs(ref), kRtol));
}

TEST(Attention, RejectsBadArguments) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *op_backends().front();
  Cache cache(ob, rng, 10, 10, 2, 32, 32);
  Tensor q = random_tensor(ob, rng, DType::f32, {4, 6, 32});
  Tensor out = nan_tensor(ob, {4, 6, 32});
  try {
    ops::attention(ob.be(), q, cache.k, cache.v, out, {7, std::nullopt});
    FAIL() << "expected invalid_argument";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("11 cache rows"), std::string::npos) << e.what();
  }
  Tensor q5 = random_tensor(ob, rng, DType::f32, {4, 5, 32});
  Tensor out5 = nan_tensor(ob, {4, 5, 32});
  EXPECT_THROW(ops::attention(ob.be(), q5, cache.k, cache.v, out5, {0, std::nullopt}), Error);
}
