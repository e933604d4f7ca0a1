// ops::gated_deltanet, both forms, against the float64 token-by-token recurrence
// (ops/reference/gated_deltanet_ref.h): in pieces vs whole (the recurrent form bitwise, the chunked WY form
// within its tolerance), thread-count invariance, and the workspace (measured vs planned, flat in T).
#include "ops/gated_deltanet.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "op_harness.h"
#include "ops/reference/gated_deltanet_ref.h"

using namespace keel;
using namespace keel::testing;

namespace {

// The fp32 recurrence vs the float64 one: |Δ| ≤ 3e-6·max|ref|. The worst measured over 30 seeds on every
// backend was 6.6e-7·max on outputs (Dk = 128) and 4.4e-7 on the state (the chunked WY form this op ran
// before needed 3e-5 + 1e-4·|ref|). A wrong value→key head map or a decay off by one token fails by 100× or
// more.
constexpr double kAtolScale = 3e-6, kRtol = 0;

// The chunked WY form vs the float64 recurrence: |Δ| ≤ 3e-5·max|ref| + 1e-4·|ref|. Looser because the
// forward substitution through (I + A) over a 64-token chunk amplifies fp32 rounding: the worst measured over
// 20 seeds per shape was 5.5e-6·max|ref| at chunk 64, 2.3e-6 at 16 and 7e-7 at 8.
constexpr double kChunkedAtolScale = 3e-5, kChunkedRtol = 1e-4;

using Form = ops::GatedDeltaNetForm;

struct Shape {
  int64_t T, Hk, Hv, Dk, Dv;
};

// Inputs as column slices of the wide tensors a model has: mixed_qkv [T, 2·Hk·Dk + Hv·Dv] (the conv output,
// split q | k | v) and ab [T, 2·Hv] (in_proj_b | in_proj_a).
struct Problem {
  Shape s;
  Tensor qkv, ab, q, k, v, a, b, A_log, dt_bias, state0;
  bool l2 = true;
  Form form = Form::recurrent;
  int64_t chunk = 64;  // the chunked form's

  Problem(OpBackend& ob, TestRng& rng, Shape shape) : s(shape) {
    const int64_t KD = s.Hk * s.Dk, st = (2 * KD + s.Hv * s.Dv) * 4;
    qkv = random_tensor(ob, rng, DType::f32, {s.T, 2 * KD + s.Hv * s.Dv});
    ab = random_tensor(ob, rng, DType::f32, {s.T, 2 * s.Hv}, 2.5);
    q = qkv.strided_view({s.T, s.Hk, s.Dk}, {st, s.Dk * 4, 4});
    k = qkv.strided_view({s.T, s.Hk, s.Dk}, {st, s.Dk * 4, 4}, KD * 4);
    v = qkv.strided_view({s.T, s.Hv, s.Dv}, {st, s.Dv * 4, 4}, 2 * KD * 4);
    b = ab.strided_view({s.T, s.Hv}, {ab.stride_bytes(0), 4});
    a = ab.strided_view({s.T, s.Hv}, {ab.stride_bytes(0), 4}, s.Hv * 4);
    std::vector<double> a_log(s.Hv), bias(s.Hv);
    for (int64_t h = 0; h < s.Hv; ++h) {
      a_log[h] = std::log(rng.uniform(0.01, 16.0));  // transformers' init range
      bias[h] = rng.uniform(-1.0, 1.0);
    }
    A_log = tensor_from(ob, DType::bf16, {s.Hv}, a_log);
    dt_bias = tensor_from(ob, DType::f32, {s.Hv}, bias);
    state0 = random_tensor(ob, rng, DType::f32, {s.Hv, s.Dk, s.Dv}, 0.3);
  }

  std::vector<double> reference(std::vector<double>& state) const {
    return ref::gated_deltanet({s.T, s.Hk, s.Hv, s.Dk, s.Dv}, values(q), values(k), values(v), values(a),
                               values(b), values(A_log), values(dt_bias), l2, 1e-6, state);
  }
  ops::GatedDeltaNetParams params() const { return {chunk, l2, 1e-6f, form}; }
  double atol_scale() const { return form == Form::chunked ? kChunkedAtolScale : kAtolScale; }
  double rtol() const { return form == Form::chunked ? kChunkedRtol : kRtol; }
  void run(Backend& be, Tensor& state, Tensor& out) const {
    ops::gated_deltanet(be, q, k, v, a, b, A_log, dt_bias, state, out, params());
  }
};

Tensor copy_of(OpBackend& ob, const Tensor& t) {
  Tensor c = Tensor::empty(ob.pool(), t.dtype(), t.shape().data(), t.ndim(), "copy");
  std::vector<double> v = values(t);
  for (int64_t i = 0; i < c.numel(); ++i) set_element(c, i, v[i]);
  return c;
}

void expect_matches_reference(OpBackend& ob, const Problem& pr) {
  const Shape& s = pr.s;
  std::vector<double> ref_state = values(pr.state0);
  std::vector<double> ref_out = pr.reference(ref_state);
  Tensor state = copy_of(ob, pr.state0);
  Tensor out = nan_tensor(ob, {s.T, s.Hv, s.Dv});
  pr.run(ob.be(), state, out);
  EXPECT_TRUE(all_close(out, ref_out, pr.atol_scale() * max_abs(ref_out), pr.rtol()));
  EXPECT_TRUE(all_close(state, ref_state, pr.atol_scale() * max_abs(ref_state), pr.rtol()));
}

// Feeds the problem to the op in pieces of the given lengths (summing to T), carrying `state`.
void run_in_pieces(OpBackend& ob, const Problem& pr, const std::vector<int64_t>& pieces, Tensor& state,
                   Tensor& out) {
  int64_t t0 = 0;
  for (int64_t len : pieces) {
    Tensor o = out.slice(0, t0, len);
    ops::gated_deltanet(ob.be(), pr.q.slice(0, t0, len), pr.k.slice(0, t0, len), pr.v.slice(0, t0, len),
                        pr.a.slice(0, t0, len), pr.b.slice(0, t0, len), pr.A_log, pr.dt_bias, state, o,
                        pr.params());
    t0 += len;
  }
  ASSERT_EQ(t0, pr.s.T);
}

}  // namespace

TEST(GatedDeltaNet, MatchesReference) {
  KEEL_TEST_RNG(rng);
  const Shape shapes[] = {
      {1, 2, 4, 16, 8},      // one token, 2 value heads per key head
      {5, 1, 3, 8, 12},      // 3 value heads per key head; Dv shorter than a vector
      {64, 2, 2, 32, 32},    // Dv two vectors (AVX-512), one 2-vector block (AVX2)
      {150, 2, 8, 32, 24},   // GQA 4; Dv one vector + a scalar tail (AVX-512)
      {37, 3, 3, 20, 80},    // odd Dk; Dv a 4-vector block + one vector (AVX-512)
      {300, 2, 2, 16, 20},   // long: decay and error accumulation over many tokens
      {70, 1, 2, 128, 128},  // qwen3_5 head widths
      {40, 1, 2, 200, 20},   // Dk past 128 (CUDA: 13 of a lane's 16 rows), Dv 2 columns past a block of 8
  };
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (const Shape& s : shapes) {
      SCOPED_TRACE(::testing::Message()
                   << "T=" << s.T << " Hk=" << s.Hk << " Hv=" << s.Hv << " Dk=" << s.Dk << " Dv=" << s.Dv);
      expect_matches_reference(*ob, Problem(*ob, rng, s));
    }
  }
}

TEST(GatedDeltaNet, WithoutQkNorm) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *cpu_op_backends().back();
  for (int64_t T : {1, 40}) {
    Problem pr(ob, rng, {T, 2, 4, 16, 16});
    pr.l2 = false;
    expect_matches_reference(ob, pr);
  }
}

// A sequence fed in pieces (single tokens among them, one longer than the 64-token chunk models use; then
// every token alone, as decode does) ends in the same state with the same outputs as one call, bit for bit.
TEST(GatedDeltaNet, PiecesEqualWholeBitwise) {
  KEEL_TEST_RNG(rng);
  const Shape s{112, 2, 4, 32, 24};
  const std::vector<int64_t> mixed = {7, 1, 70, 1, 33}, singles(s.T, 1);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Problem pr(*ob, rng, s);
    Tensor whole_state = copy_of(*ob, pr.state0), whole = nan_tensor(*ob, {s.T, s.Hv, s.Dv});
    pr.run(ob->be(), whole_state, whole);
    std::vector<double> ref_state = values(pr.state0);
    std::vector<double> ref_out = pr.reference(ref_state);
    EXPECT_TRUE(all_close(whole, ref_out, kAtolScale * max_abs(ref_out), kRtol));
    for (const std::vector<int64_t>& pieces : {mixed, singles}) {
      SCOPED_TRACE(::testing::Message() << pieces.size() << " pieces");
      Tensor state = copy_of(*ob, pr.state0), out = nan_tensor(*ob, {s.T, s.Hv, s.Dv});
      run_in_pieces(*ob, pr, pieces, state, out);
      if (ob->is_reference()) {
        // The reference keeps S in double within a call and rounds it to f32 at the call's end, so pieces
        // agree with one call within the reference tolerance, not bitwise (the bitwise promise is the CPU's).
        EXPECT_TRUE(all_close(out, values(whole), kAtolScale * max_abs(ref_out), kRtol));
        continue;
      }
      EXPECT_TRUE(bitwise_equal(out, whole));
      EXPECT_TRUE(bitwise_equal(state, whole_state));
    }
  }
}

TEST(GatedDeltaNet, ThreadCountDoesNotChangeBits) {
  KEEL_TEST_RNG(rng);
  OpBackend* one = nullptr;
  OpBackend* three = nullptr;
  for (OpBackend* ob : cpu_op_backends()) {
    if (ob->cpu_isa != cpu_isa()) continue;
    (ob->threads == 1 ? one : three) = ob;
  }
  ASSERT_TRUE(one && three);
  for (Form form : {Form::recurrent, Form::chunked})
    for (int64_t T : {1, 80}) {
      SCOPED_TRACE(::testing::Message() << (form == Form::chunked ? "chunked" : "recurrent") << " T=" << T);
      Problem pr(*one, rng, {T, 1, 5, 16, 16});
      pr.form = form;
      Tensor s1 = copy_of(*one, pr.state0), o1 = nan_tensor(*one, {T, 5, 16});
      Tensor s3 = copy_of(*one, pr.state0), o3 = nan_tensor(*one, {T, 5, 16});
      pr.run(one->be(), s1, o1);
      pr.run(three->be(), s3, o3);
      EXPECT_TRUE(bitwise_equal(o1, o3));
      EXPECT_TRUE(bitwise_equal(s1, s3));
    }
}

// Measured == planned at every T. The recurrent form takes the same bytes at every T ≥ 1; the chunked form's
// grow with T up to the chunk and are flat from there (T = 64 and T = 700 take the same bytes).
TEST(GatedDeltaNet, WorkspaceIsPlannedAndFlatInT) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends())
    for (Form form : {Form::recurrent, Form::chunked}) {
      SCOPED_TRACE(ob->name);
      SCOPED_TRACE(form == Form::chunked ? "chunked" : "recurrent");
      std::vector<int64_t> measured;
      for (int64_t T : {1, 9, 64, 700}) {
        const Shape s{T, 2, 4, 32, 32};
        Problem pr(*ob, rng, s);
        pr.form = form;
        Tensor state = copy_of(*ob, pr.state0), out = nan_tensor(*ob, {T, s.Hv, s.Dv});
        int64_t peak = pool_peak_during(ob->pool(), [&] { pr.run(ob->be(), state, out); });
        EXPECT_TRUE(workspace_ok(
            peak, ops::gated_deltanet_workspace_bytes(ob->be(), T, s.Hv, s.Dk, s.Dv, pr.params())))
            << "T=" << T;
        measured.push_back(peak);
      }
      const ops::GatedDeltaNetParams p{64, true, 1e-6f, form};
      if (form == Form::recurrent) {
        for (size_t i = 1; i < measured.size(); ++i)
          EXPECT_EQ(measured[i], measured[0]) << "workspace grew with T";
        EXPECT_EQ(ops::gated_deltanet_workspace_bytes(ob->be(), 16384, 32, 128, 128, p),
                  ops::gated_deltanet_workspace_bytes(ob->be(), 1, 32, 128, 128, p));
      } else {
        EXPECT_EQ(measured[2], measured[3]) << "workspace grew from T=64 to T=700";
        EXPECT_EQ(ops::gated_deltanet_workspace_bytes(ob->be(), 16384, 32, 128, 128, p),
                  ops::gated_deltanet_workspace_bytes(ob->be(), 64, 32, 128, 128, p));
      }
      EXPECT_EQ(ops::gated_deltanet_workspace_bytes(ob->be(), 0, 32, 128, 128, p), 0);
    }
}

TEST(GatedDeltaNet, RejectsMismatchedShapes) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *op_backends().front();
  Problem pr(ob, rng, {4, 2, 4, 8, 8});
  Tensor state_bad = random_tensor(ob, rng, DType::f32, {4, 8, 9});
  Tensor out = nan_tensor(ob, {4, 4, 8});
  try {
    pr.run(ob.be(), state_bad, out);
    FAIL() << "expected invalid_argument";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("state"), std::string::npos) << e.what();
  }
  Problem odd(ob, rng, {4, 3, 4, 8, 8});  // 4 value heads over 3 key heads
  Tensor state = copy_of(ob, odd.state0);
  EXPECT_THROW(odd.run(ob.be(), state, out), Error);
}

// v rows 5 GiB apart (a view over a sparse arena): the last row sits 10 GiB in, 2.5·2^30 floats, so element
// offsets past 2^31 must not wrap.
TEST(GatedDeltaNet, TokenOffsetsPast32Bits) {
  KEEL_TEST_RNG(rng);
  const Shape s{3, 1, 2, 8, 8};
  const int64_t stride = int64_t{5} << 30;
  SparseArena arena(stride * s.T);
  if (!arena.ok()) GTEST_SKIP() << "no address space for the sparse arena";
  OpBackend& ob = *cpu_op_backends().back();
  Problem pr(ob, rng, s);
  for (int64_t t = 0; t < s.T; ++t) {
    float* row = reinterpret_cast<float*>(arena.commit(t * stride, s.Hv * s.Dv * 4));
    for (int64_t i = 0; i < s.Hv * s.Dv; ++i) row[i] = static_cast<float>(rng.uniform());
  }
  pr.v = Tensor::borrow(arena.base(), DType::f32, {s.T, s.Hv, s.Dv})
             .strided_view({s.T, s.Hv, s.Dv}, {stride, s.Dv * 4, 4});
  expect_matches_reference(ob, pr);
}

// The chunked WY form: T < chunk, exactly one chunk, 3+ chunks with a short last one, chunk 16 at odd widths,
// the qwen3_5 widths; T = 1 takes the recurrence.
TEST(GatedDeltaNetChunked, MatchesReference) {
  KEEL_TEST_RNG(rng);
  struct Case {
    Shape s;
    int64_t chunk;
  };
  const Case cases[] = {
      {{1, 2, 4, 16, 8}, 64},      // one token: the recurrence
      {{5, 1, 3, 8, 12}, 64},      // T < chunk, 3 value heads per key head
      {{64, 2, 2, 32, 32}, 64},    // exactly one chunk
      {{150, 2, 8, 32, 24}, 64},   // 3 chunks (64, 64, 22), GQA 4
      {{37, 3, 3, 20, 16}, 16},    // chunk 16, odd widths
      {{70, 1, 2, 128, 128}, 64},  // qwen3_5 head widths
  };
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (const Case& c : cases) {
      const Shape& s = c.s;
      SCOPED_TRACE(::testing::Message() << "T=" << s.T << " Hk=" << s.Hk << " Hv=" << s.Hv << " Dk=" << s.Dk
                                        << " Dv=" << s.Dv << " chunk=" << c.chunk);
      Problem pr(*ob, rng, s);
      pr.form = Form::chunked;
      pr.chunk = c.chunk;
      expect_matches_reference(*ob, pr);
    }
  }
}

TEST(GatedDeltaNetChunked, WithoutQkNorm) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *cpu_op_backends().back();
  Problem pr(ob, rng, {40, 2, 4, 16, 16});
  pr.l2 = false;
  pr.form = Form::chunked;
  pr.chunk = 16;
  expect_matches_reference(ob, pr);
}

// Pieces that are not multiples of the chunk (single tokens among them, one longer than a chunk) end in the
// same state with the same outputs as one call and as the recurrent form, within the chunked tolerance (the
// WY form rounds S at chunk ends, so not bitwise).
TEST(GatedDeltaNetChunked, PiecesAndTheRecurrentFormAgree) {
  KEEL_TEST_RNG(rng);
  const Shape s{112, 2, 4, 32, 16};
  const std::vector<int64_t> pieces = {7, 1, 70, 1, 33};
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Problem pr(*ob, rng, s);
    pr.form = Form::chunked;
    Tensor whole_state = copy_of(*ob, pr.state0), whole = nan_tensor(*ob, {s.T, s.Hv, s.Dv});
    pr.run(ob->be(), whole_state, whole);
    Tensor state = copy_of(*ob, pr.state0), out = nan_tensor(*ob, {s.T, s.Hv, s.Dv});
    run_in_pieces(*ob, pr, pieces, state, out);
    std::vector<double> w = values(whole), ws = values(whole_state);
    EXPECT_TRUE(all_close(out, w, kChunkedAtolScale * max_abs(w), kChunkedRtol));
    EXPECT_TRUE(all_close(state, ws, kChunkedAtolScale * max_abs(ws), kChunkedRtol));
    Problem rec = pr;
    rec.form = Form::recurrent;
    Tensor rec_state = copy_of(*ob, pr.state0), rec_out = nan_tensor(*ob, {s.T, s.Hv, s.Dv});
    rec.run(ob->be(), rec_state, rec_out);
    EXPECT_TRUE(all_close(whole, values(rec_out), kChunkedAtolScale * max_abs(w), kChunkedRtol));
    EXPECT_TRUE(all_close(whole_state, values(rec_state), kChunkedAtolScale * max_abs(ws), kChunkedRtol));
    std::vector<double> ref_state = values(pr.state0);
    std::vector<double> ref_out = pr.reference(ref_state);
    EXPECT_TRUE(all_close(out, ref_out, kChunkedAtolScale * max_abs(ref_out), kChunkedRtol));
  }
}
