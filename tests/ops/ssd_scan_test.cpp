// ops::ssd_scan against the float64 token-by-token recurrence (ops/reference/ssd_scan_ref.h), in pieces vs
// whole, thread-count invariance, and its workspace (measured vs planned, flat in T).
#include "ops/ssd_scan.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "op_harness.h"
#include "ops/reference/ssd_scan_ref.h"

using namespace keel;
using namespace keel::testing;

namespace {

// fp32 chunked scan vs the float64 recurrence: |Δ| ≤ 5e-6·max|ref| + 5e-5·|ref|. Measured worst cases sit
// near 1e-6·max|ref| (fp32 sums over N and over a chunk's tokens, with a state carried across chunks), so
// this leaves 5× headroom; a 1e-3 error in one cumsum entry or a wrong head→group map fails it by 10× or
// more.
constexpr double kAtolScale = 5e-6, kRtol = 5e-5;

struct Shape {
  int64_t T, H, P, G, N, Q;
};

// One problem: inputs as column slices of the wide tensors a model has (xBC = conv output [T, H·P + 2·G·N],
// zxbcdt = in_proj output whose last H columns are dt), so the op sees real strides.
struct Problem {
  Shape s;
  Tensor xbc, proj, x, dt, B, C, A_log, dt_bias, D, state0;
  float dt_min = 0, dt_max = INFINITY;

  // model_dt: dt_bias drawn so that dt = softplus(dt_raw + dt_bias) spans ~0.003 … 0.13 (Mamba2's dt range at
  // init, 0.001 … 0.1), not ~0.01 … 2. Long chunks need it: with dt up to 2 and A down to −16, Λ reaches
  // −400 and beyond within a chunk of 96, and e^{Λ_i − Λ_j} from two such f32 sums is off by ~Λ·2⁻²⁴ relative
  // (the CPU's scan failed 2 of 40 seeds at Q = 96 so).
  Problem(OpBackend& ob, TestRng& rng, Shape shape, bool model_dt = false) : s(shape) {
    const int64_t I = s.H * s.P, GN = s.G * s.N;
    xbc = random_tensor(ob, rng, DType::f32, {s.T, I + 2 * GN});
    proj = random_tensor(ob, rng, DType::f32, {s.T, 5 + s.H}, 2.0);
    x = xbc.strided_view({s.T, s.H, s.P}, {xbc.stride_bytes(0), s.P * 4, 4});
    B = xbc.strided_view({s.T, s.G, s.N}, {xbc.stride_bytes(0), s.N * 4, 4}, I * 4);
    C = xbc.strided_view({s.T, s.G, s.N}, {xbc.stride_bytes(0), s.N * 4, 4}, (I + GN) * 4);
    dt = proj.strided_view({s.T, s.H}, {proj.stride_bytes(0), 4}, 5 * 4);
    std::vector<double> a_log(s.H), bias(s.H), d(s.H);
    for (int64_t h = 0; h < s.H; ++h) {
      a_log[h] = std::log(rng.uniform(1.0, 16.0));
      bias[h] = model_dt ? rng.uniform(-6.0, -2.0) : rng.uniform(-4.0, 0.5);  // slow and fast heads
      d[h] = rng.uniform(0.5, 1.5);
    }
    A_log = tensor_from(ob, DType::f32, {s.H}, a_log);
    dt_bias = tensor_from(ob, DType::bf16, {s.H}, bias);  // stored weights may be bf16
    D = tensor_from(ob, DType::f32, {s.H}, d);
    state0 = random_tensor(ob, rng, DType::f32, {s.H, s.P, s.N}, 0.5);
  }

  std::vector<double> reference(std::vector<double>& state) const {
    return ref::ssd_scan({s.T, s.H, s.P, s.G, s.N}, values(x), values(dt), values(B), values(C),
                         values(A_log), values(dt_bias), values(D), dt_min, dt_max, state);
  }

  ops::SsdScanParams params() const { return {s.Q, dt_min, dt_max}; }
};

Tensor copy_of(OpBackend& ob, const Tensor& t) {
  Tensor c = Tensor::empty(ob.pool(), t.dtype(), t.shape().data(), t.ndim(), "copy");
  std::vector<double> v = values(t);
  for (int64_t i = 0; i < c.numel(); ++i) set_element(c, i, v[i]);
  return c;
}

void run_whole(OpBackend& ob, const Problem& pr, Tensor& state, Tensor& y) {
  ops::ssd_scan(ob.be(), pr.x, pr.dt, pr.B, pr.C, pr.A_log, pr.dt_bias, pr.D, state, y, pr.params());
}

}  // namespace

namespace {

// Every backend on every shape, one call each: y and the final state against the float64 recurrence.
void expect_shapes_match_reference(TestRng& rng, const std::vector<Shape>& shapes, bool model_dt) {
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (const Shape& s : shapes) {
      SCOPED_TRACE(::testing::Message() << "T=" << s.T << " H=" << s.H << " P=" << s.P << " G=" << s.G
                                        << " N=" << s.N << " Q=" << s.Q);
      Problem pr(*ob, rng, s, model_dt);
      std::vector<double> ref_state = values(pr.state0);
      std::vector<double> ref_y = pr.reference(ref_state);
      Tensor state = copy_of(*ob, pr.state0);
      Tensor y = nan_tensor(*ob, {s.T, s.H, s.P});
      run_whole(*ob, pr, state, y);
      EXPECT_TRUE(all_close(y, ref_y, kAtolScale * max_abs(ref_y), kRtol));
      EXPECT_TRUE(all_close(state, ref_state, kAtolScale * max_abs(ref_state), kRtol));
    }
  }
}

}  // namespace

TEST(SsdScan, MatchesReference) {
  KEEL_TEST_RNG(rng);
  expect_shapes_match_reference(rng,
                                {
                                    {1, 4, 8, 2, 16, 8},      // one token: the decode path
                                    {5, 4, 8, 1, 16, 8},      // T < Q, one group
                                    {2, 3, 5, 3, 7, 4},       // odd widths, G = H
                                    {37, 6, 12, 3, 20, 8},    // ≥ 3 chunks, last one partial
                                    {64, 4, 16, 2, 32, 16},   // whole chunks
                                    {70, 8, 64, 2, 128, 32},  // nemotron-like widths (P = 64, N = 128)
                                },
                                /*model_dt=*/false);
}

// Chunks as long as the models' (nemotron_h: Q = 128), with the models' time steps: several row and key tiles
// of a chunk (CUDA: 64-row tiles, 32-token key tiles), a partial chunk, P past 64 and not a multiple of 4.
TEST(SsdScan, LongChunksMatchReference) {
  KEEL_TEST_RNG(rng);
  expect_shapes_match_reference(
      rng,
      {
          {300, 4, 64, 2, 128, 128},  // nemotron_h's widths and chunk: two row tiles
          {150, 2, 100, 1, 24, 96},   // a partial row tile in the first chunk, P = 100
      },
      /*model_dt=*/true);
}

TEST(SsdScan, TimeStepLimitClamps) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *op_backends().front();
  for (int64_t T : {1, 29}) {
    Problem pr(ob, rng, {T, 4, 8, 2, 16, 8});
    pr.dt_min = 0.05f, pr.dt_max = 0.3f;
    std::vector<double> ref_state = values(pr.state0);
    std::vector<double> ref_y = pr.reference(ref_state);
    Tensor state = copy_of(ob, pr.state0);
    Tensor y = nan_tensor(ob, {T, 4, 8});
    run_whole(ob, pr, state, y);
    EXPECT_TRUE(all_close(y, ref_y, kAtolScale * max_abs(ref_y), kRtol));
    EXPECT_TRUE(all_close(state, ref_state, kAtolScale * max_abs(ref_state), kRtol));
  }
}

// A sequence fed in pieces (splits that are not multiples of Q, single tokens, a piece longer than 2·Q) ends
// in the same state with the same outputs as one call, and both match the reference.
TEST(SsdScan, PiecesEqualWhole) {
  KEEL_TEST_RNG(rng);
  const int64_t pieces[] = {7, 1, 19, 40, 1, 3};  // 71 tokens, Q = 16
  const Shape s{71, 6, 16, 2, 24, 16};
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Problem pr(*ob, rng, s);
    std::vector<double> ref_state = values(pr.state0);
    std::vector<double> ref_y = pr.reference(ref_state);
    Tensor whole_state = copy_of(*ob, pr.state0), whole_y = nan_tensor(*ob, {s.T, s.H, s.P});
    run_whole(*ob, pr, whole_state, whole_y);

    Tensor state = copy_of(*ob, pr.state0), y = nan_tensor(*ob, {s.T, s.H, s.P});
    int64_t t0 = 0;
    for (int64_t len : pieces) {
      Tensor y_piece = y.slice(0, t0, len);
      ops::ssd_scan(ob->be(), pr.x.slice(0, t0, len), pr.dt.slice(0, t0, len), pr.B.slice(0, t0, len),
                    pr.C.slice(0, t0, len), pr.A_log, pr.dt_bias, pr.D, state, y_piece, pr.params());
      t0 += len;
    }
    ASSERT_EQ(t0, s.T);
    std::vector<double> whole = values(whole_y), whole_s = values(whole_state);
    EXPECT_TRUE(all_close(y, whole, kAtolScale * max_abs(whole), kRtol));
    EXPECT_TRUE(all_close(state, whole_s, kAtolScale * max_abs(whole_s), kRtol));
    EXPECT_TRUE(all_close(y, ref_y, kAtolScale * max_abs(ref_y), kRtol));
    EXPECT_TRUE(all_close(state, ref_state, kAtolScale * max_abs(ref_state), kRtol));
  }
}

// Each head is computed by one worker in a fixed order: 1 thread and 3 threads give the same bits.
TEST(SsdScan, ThreadCountDoesNotChangeBits) {
  KEEL_TEST_RNG(rng);
  std::vector<OpBackend*> obs = cpu_op_backends();
  OpBackend& one = *obs.back();  // best ISA, 1 thread
  OpBackend* three = nullptr;
  for (OpBackend* ob : obs)
    if (ob != &one && ob->name.find(cpu_isa_name(cpu_isa())) != std::string::npos) three = ob;
  ASSERT_NE(three, nullptr);
  for (int64_t T : {1, 45}) {
    Problem pr(one, rng, {T, 5, 16, 1, 32, 16});
    Tensor s1 = copy_of(one, pr.state0), y1 = nan_tensor(one, {T, 5, 16});
    Tensor s3 = copy_of(one, pr.state0), y3 = nan_tensor(one, {T, 5, 16});
    run_whole(one, pr, s1, y1);
    run_whole(*three, pr, s3, y3);
    EXPECT_TRUE(bitwise_equal(y1, y3));
    EXPECT_TRUE(bitwise_equal(s1, s3));
  }
}

// Workspace: the pool's peak during the call is what ssd_scan_workspace_bytes said, and it does not grow with
// T.
TEST(SsdScan, WorkspaceIsPlannedAndFlatInT) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    std::vector<int64_t> measured;
    for (int64_t T : {1, 9, 64, 640}) {
      const Shape s{T, 8, 16, 2, 32, 32};
      Problem pr(*ob, rng, s);
      Tensor state = copy_of(*ob, pr.state0), y = nan_tensor(*ob, {T, s.H, s.P});
      int64_t peak = pool_peak_during(ob->pool(), [&] { run_whole(*ob, pr, state, y); });
      EXPECT_TRUE(workspace_ok(peak, ops::ssd_scan_workspace_bytes(ob->be(), T, s.H, s.P, s.G, s.N, s.Q)))
          << "T=" << T;
      measured.push_back(peak);
    }
    EXPECT_EQ(measured[2], measured[3]) << "workspace grew from T=64 to T=640";
    // The plan for a 16K-token step equals the plan for a 1K-token step (nemotron-H-like widths).
    EXPECT_EQ(ops::ssd_scan_workspace_bytes(ob->be(), 16384, 64, 64, 8, 128, 128),
              ops::ssd_scan_workspace_bytes(ob->be(), 1024, 64, 64, 8, 128, 128));
  }
}

// A state too wide for a GPU block's shared memory (N = 4096: the recurrence's slice alone is 256 KiB, the
// H200 allows 227 KiB) is Error(unsupported) naming the op and both sizes, refused before any launch, and the
// backend computes the next call right (no CUDA error left behind); a host backend computes it.
TEST(SsdScan, StateTooWideForTheDeviceIsRefusedAndTheBackendGoesOn) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (const Shape& s : {Shape{2, 1, 16, 1, 4096, 8}, Shape{3, 2, 8, 1, 16, 8}}) {
      Problem pr(*ob, rng, s);
      std::vector<double> ref_state = values(pr.state0);
      std::vector<double> ref_y = pr.reference(ref_state);
      Tensor state = copy_of(*ob, pr.state0);
      Tensor y = nan_tensor(*ob, {s.T, s.H, s.P});
      if (s.N > 1024 && ob->be().kind() == DeviceKind::cuda) {
        try {
          run_whole(*ob, pr, state, y);
          FAIL() << "expected unsupported";
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
          EXPECT_NE(std::string(e.what()).find("ssd_scan shared memory: 524352 bytes per block, the device "
                                               "allows"),
                    std::string::npos)
              << e.what();
        }
        continue;
      }
      run_whole(*ob, pr, state, y);
      ob->be().synchronize();
      EXPECT_TRUE(all_close(y, ref_y, kAtolScale * max_abs(ref_y), kRtol));
      EXPECT_TRUE(all_close(state, ref_state, kAtolScale * max_abs(ref_state), kRtol));
    }
  }
}

TEST(SsdScan, RejectsMismatchedShapes) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *op_backends().front();
  Problem pr(ob, rng, {4, 4, 8, 2, 16, 8});
  Tensor state = copy_of(ob, pr.state0);
  Tensor y_bad = nan_tensor(ob, {4, 4, 9});
  try {
    ops::ssd_scan(ob.be(), pr.x, pr.dt, pr.B, pr.C, pr.A_log, pr.dt_bias, pr.D, state, y_bad, pr.params());
    FAIL() << "expected invalid_argument";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("y"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4, 4, 8]"), std::string::npos) << e.what();
  }
  Tensor y = nan_tensor(ob, {4, 4, 8});
  Tensor groups3 = random_tensor(ob, rng, DType::f32, {4, 3, 16});
  EXPECT_THROW(ops::ssd_scan(ob.be(), pr.x, pr.dt, groups3, groups3, pr.A_log, pr.dt_bias, pr.D, state, y,
                             pr.params()),
               Error);
}

// x rows 5 GiB apart (a view over a sparse arena): the last row sits 10 GiB in, 2.5·2^30 floats, so element
// offsets past 2^31 must not wrap.
TEST(SsdScan, TokenOffsetsPast32Bits) {
  KEEL_TEST_RNG(rng);
  const Shape s{3, 2, 8, 1, 16, 2};
  const int64_t stride = int64_t{5} << 30;
  SparseArena arena(stride * s.T);
  if (!arena.ok()) GTEST_SKIP() << "no address space for the sparse arena";
  OpBackend& ob = *cpu_op_backends().back();
  Problem pr(ob, rng, s);
  for (int64_t t = 0; t < s.T; ++t) {
    float* row = reinterpret_cast<float*>(arena.commit(t * stride, s.H * s.P * 4));
    for (int64_t i = 0; i < s.H * s.P; ++i) row[i] = static_cast<float>(rng.uniform());
  }
  pr.x = Tensor::borrow(arena.base(), DType::f32, {s.T, s.H, s.P})
             .strided_view({s.T, s.H, s.P}, {stride, s.P * 4, 4});
  std::vector<double> ref_state = values(pr.state0);
  std::vector<double> ref_y = pr.reference(ref_state);
  Tensor state = copy_of(ob, pr.state0), y = nan_tensor(ob, {s.T, s.H, s.P});
  run_whole(ob, pr, state, y);
  EXPECT_TRUE(all_close(y, ref_y, kAtolScale * max_abs(ref_y), kRtol));
  EXPECT_TRUE(all_close(state, ref_state, kAtolScale * max_abs(ref_state), kRtol));
}
