// ops::moe_route / moe_experts / moe against the float64 reference (ops/reference/moe_ref.h) and hand-worked
// routing examples; batch invariance (a token alone vs in a step, bitwise); workspace measured vs planned.
#include "ops/moe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "op_harness.h"
#include "ops/reference/moe_ref.h"

using namespace keel;
using namespace keel::testing;

namespace {

// fp32 matmuls over ≤ 64-wide rows and fp32 routing weights vs float64: |Δ| ≤ 2e-6·max|ref| + 2e-5·|ref|.
constexpr double kAtolScale = 2e-6, kRtol = 2e-5;
// Tokens whose reference routing has a kept/dropped gap below this are not compared: fp32 logits may pick the
// other expert there, which is a tie, not a bug (the test asserts such tokens are rare).
constexpr double kMinMargin = 1e-5;

double logit_of(double s) {
  return std::log(s / (1 - s));
}

struct Routed {
  Tensor indices, weights;
};

Routed route(OpBackend& ob, const std::vector<double>& logits, int64_t T, int64_t E, const Tensor& bias,
             const ops::MoeParams& p) {
  Tensor l = tensor_from(ob, DType::f32, {T, E}, logits);
  Routed r{Tensor::empty(ob.pool(), DType::i32, {T, p.top_k}, "indices"),
           Tensor::empty(ob.pool(), DType::f32, {T, p.top_k}, "weights")};
  ops::moe_route(ob.be(), l, bias, p, r.indices, r.weights);
  return r;
}

// nemotron_h's reading, worked by hand: groups score the sum of their two best biased choices (not the max),
// experts are chosen by biased choice inside the kept groups, weights are the unbiased sigmoids, normalized
// and scaled. Max-based groups, no group limit or biased weights would each give a different answer.
TEST(MoeRoute, NemotronGroupLimitedWorkedExample) {
  const double s[8] = {0.95, 0.05, 0.60, 0.55, 0.70, 0.10, 0.30, 0.25};
  std::vector<double> logits(8);
  for (int e = 0; e < 8; ++e) logits[e] = logit_of(s[e]);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Tensor bias = tensor_from(*ob, DType::f32, {8}, {0, 0, 0, 0, 0, 0, 0.5, 0.6});
    ops::MoeParams p{ops::MoeRouter::sigmoid_grouped, ops::MoeActivation::relu2, 2, 4, 2, true, 2.0f};
    Routed r = route(*ob, logits, 1, 8, bias, p);
    // choices 0.95 .05 | .60 .55 | .70 .10 | .80 .85 → group sums 1.00 1.15 0.80 1.65 → groups 3 and 1 →
    // experts 7 (0.85) and 6 (0.80); weights 2·0.25/0.55 and 2·0.30/0.55.
    EXPECT_EQ(r.indices.ptr<int32_t>()[0], 7);
    EXPECT_EQ(r.indices.ptr<int32_t>()[1], 6);
    EXPECT_NEAR(r.weights.ptr<float>()[0], 2 * 0.25 / 0.55, 1e-6);
    EXPECT_NEAR(r.weights.ptr<float>()[1], 2 * 0.30 / 0.55, 1e-6);
  }
}

// qwen3_5_moe: softmax, top-k, renormalized over the k.
TEST(MoeRoute, SoftmaxTopKWorkedExample) {
  OpBackend& ob = *op_backends().front();
  ops::MoeParams p{ops::MoeRouter::softmax_topk, ops::MoeActivation::swiglu, 2};
  Routed r = route(ob, {1, 3, 2, 0}, 1, 4, Tensor(), p);
  EXPECT_EQ(r.indices.ptr<int32_t>()[0], 1);
  EXPECT_EQ(r.indices.ptr<int32_t>()[1], 2);
  EXPECT_NEAR(r.weights.ptr<float>()[0], std::exp(3.0) / (std::exp(3.0) + std::exp(2.0)), 1e-6);
  EXPECT_NEAR(r.weights.ptr<float>()[1], std::exp(2.0) / (std::exp(3.0) + std::exp(2.0)), 1e-6);
}

TEST(MoeRoute, MatchesReference) {
  KEEL_TEST_RNG(rng);
  struct Case {
    ops::MoeParams p;
    int64_t E;
    bool bias;
  } cases[] = {
      {{ops::MoeRouter::softmax_topk, ops::MoeActivation::swiglu, 8}, 64, false},
      {{ops::MoeRouter::softmax_topk, ops::MoeActivation::swiglu, 1}, 5, false},
      {{ops::MoeRouter::sigmoid_grouped, ops::MoeActivation::relu2, 6, 1, 1, true, 2.5f}, 32, true},
      {{ops::MoeRouter::sigmoid_grouped, ops::MoeActivation::relu2, 4, 8, 3, true, 1.0f}, 64, true},
      {{ops::MoeRouter::sigmoid_grouped, ops::MoeActivation::relu2, 3, 4, 2, false, 1.5f}, 16, false},
  };
  const int64_t T = 50;
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (const Case& c : cases) {
      std::vector<double> logits(T * c.E), bias(c.bias ? c.E : 0);
      for (double& v : logits) v = static_cast<float>(rng.uniform(-4, 4));
      for (double& v : bias) v = static_cast<float>(rng.uniform(-0.5, 0.5));
      Tensor bias_t = c.bias ? tensor_from(*ob, DType::f32, {c.E}, bias) : Tensor();
      Routed r = route(*ob, logits, T, c.E, bias_t, c.p);
      ref::MoeConfig rc{c.p.router == ops::MoeRouter::sigmoid_grouped,
                        false,
                        c.p.top_k,
                        c.p.n_group,
                        c.p.topk_group,
                        c.p.norm_topk_prob,
                        c.p.routed_scaling_factor};
      ref::MoeRouting want = ref::moe_route(rc, T, c.E, logits, bias);
      int skipped = 0;
      for (int64_t t = 0; t < T; ++t) {
        if (want.margin[t] < kMinMargin) {
          ++skipped;
          continue;
        }
        // The chosen experts and their weights; the order of the slots is not compared (two chosen experts
        // whose scores nearly tie may come in either order: the margin guards only the choice).
        std::vector<std::pair<int32_t, double>> got_slots, want_slots;
        for (int64_t j = 0; j < c.p.top_k; ++j) {
          got_slots.emplace_back(r.indices.ptr<int32_t>()[t * c.p.top_k + j],
                                 r.weights.ptr<float>()[t * c.p.top_k + j]);
          want_slots.emplace_back(want.indices[t * c.p.top_k + j], want.weights[t * c.p.top_k + j]);
        }
        std::sort(got_slots.begin(), got_slots.end());
        std::sort(want_slots.begin(), want_slots.end());
        for (int64_t j = 0; j < c.p.top_k; ++j) {
          EXPECT_EQ(got_slots[j].first, want_slots[j].first) << "token " << t << " expert " << j;
          const double w = want_slots[j].second;
          EXPECT_NEAR(got_slots[j].second, w, 1e-6 + 1e-5 * std::fabs(w)) << "token " << t << " expert " << j;
        }
      }
      EXPECT_LE(skipped, 2) << "near-ties are rare in random logits";
    }
  }
}

// The rows of the tokens whose routing is clear of near-ties (margin ≥ kMinMargin), of the output and of the
// reference: only those are compared (a near-tie may route either way).
struct Kept {
  std::vector<double> got, want;
};
Kept kept_rows(const std::vector<double>& got, const std::vector<double>& want,
               const ref::MoeRouting& routing, int64_t T, int64_t H) {
  Kept k;
  for (int64_t t = 0; t < T; ++t) {
    if (routing.margin[t] < kMinMargin) continue;
    k.got.insert(k.got.end(), got.begin() + t * H, got.begin() + (t + 1) * H);
    k.want.insert(k.want.end(), want.begin() + t * H, want.begin() + (t + 1) * H);
  }
  return k;
}

// One random MoE layer in both families, weights stored in `dtype`.
struct Layer {
  ops::MoeParams p;
  ops::MoeWeights w;
  ref::MoeWeightsRef rw;
  int64_t H, E, I, Is;
  Tensor fused_gate_up, fused_down;  // qwen3_5_moe's 3-D expert tensors, kept alive for the views in w

  // bits > 0: the experts packed (MLX affine, group 32; H and I multiples of 32), the rest in `dtype`.
  Layer(OpBackend& ob, TestRng& rng, bool nemotron, DType dtype, int64_t H_, int64_t E_, int64_t I_,
        int64_t Is_, int32_t bits = 0)
      : H(H_), E(E_), I(I_), Is(Is_) {
    if (nemotron)
      p = {ops::MoeRouter::sigmoid_grouped, ops::MoeActivation::relu2, 3, 4, 2, true, 2.5f};
    else
      p = {ops::MoeRouter::softmax_topk, ops::MoeActivation::swiglu, 2};
    rw.E = E, rw.I = I, rw.Is = Is;
    auto make = [&](std::initializer_list<int64_t> shape, int64_t in, std::vector<double>* ref_out) {
      Tensor t = random_tensor(ob, rng, dtype, shape, 1.5 / std::sqrt(double(in)), "weight");
      if (ref_out) *ref_out = values(t);
      return t;
    };
    // A packed [rows, in] whose dequantized values are about ±1.5/sqrt(in), like the dense ones.
    auto packed = [&](int64_t rows, int64_t in, std::vector<double>* ref_out) {
      const double amp = 1.5 / std::sqrt(double(in));
      PackedCase c = make_packed(ob, rng, rows, in, bits, 32, DType::bf16, 2 * amp / (1 << bits), amp);
      if (ref_out) *ref_out = c.dense;
      return c;
    };
    w.router = make({E, H}, H / 8, &rw.router);  // wide logits: clear routing decisions
    if (bits > 0 && nemotron) {
      w.router_bias = make({E}, 64, &rw.bias);
      for (int64_t e = 0; e < E; ++e) {
        rw.up.emplace_back(), rw.down.emplace_back();
        w.up.push_back(packed(I, H, &rw.up.back()).w);
        w.down.push_back(packed(H, I, &rw.down.back()).w);
      }
      w.shared_up = make({Is, H}, H, &rw.shared_up);
      w.shared_down = make({H, Is}, Is, &rw.shared_down);
    } else if (bits > 0) {
      for (int64_t e = 0; e < E; ++e) {  // a fused gate_up per expert, split by row views
        PackedCase gu = packed(2 * I, H, nullptr);
        w.gate.push_back(gu.w.slice_rows(0, I));
        w.up.push_back(gu.w.slice_rows(I, I));
        rw.gate.emplace_back(gu.dense.begin(), gu.dense.begin() + I * H);
        rw.up.emplace_back(gu.dense.begin() + I * H, gu.dense.end());
        rw.down.emplace_back();
        w.down.push_back(packed(H, I, &rw.down.back()).w);
      }
      w.shared_gate = make({Is, H}, H, &rw.shared_gate);
      w.shared_up = make({Is, H}, H, &rw.shared_up);
      w.shared_down = make({H, Is}, Is, &rw.shared_down);
      w.shared_expert_gate = make({1, H}, H, &rw.shared_expert_gate);
    } else if (nemotron) {
      w.router_bias = make({E}, 64, &rw.bias);
      for (int64_t e = 0; e < E; ++e) {
        rw.up.emplace_back(), rw.down.emplace_back();
        w.up.push_back(make({I, H}, H, &rw.up.back()));
        w.down.push_back(make({H, I}, I, &rw.down.back()));
      }
      w.shared_up = make({Is, H}, H, &rw.shared_up);
      w.shared_down = make({H, Is}, Is, &rw.shared_down);
    } else {
      fused_gate_up = make({E, 2 * I, H}, H, nullptr);
      fused_down = make({E, H, I}, I, nullptr);
      for (int64_t e = 0; e < E; ++e) {
        Tensor gu = fused_gate_up.select(e);
        w.gate.push_back(gu.slice(0, 0, I));
        w.up.push_back(gu.slice(0, I, I));
        w.down.push_back(fused_down.select(e));
        rw.gate.push_back(values(w.gate.back().data));
        rw.up.push_back(values(w.up.back().data));
        rw.down.push_back(values(w.down.back().data));
      }
      w.shared_gate = make({Is, H}, H, &rw.shared_gate);
      w.shared_up = make({Is, H}, H, &rw.shared_up);
      w.shared_down = make({H, Is}, Is, &rw.shared_down);
      w.shared_expert_gate = make({1, H}, H, &rw.shared_expert_gate);
    }
  }

  ref::MoeConfig config() const {
    return {p.router == ops::MoeRouter::sigmoid_grouped,
            p.activation == ops::MoeActivation::swiglu,
            p.top_k,
            p.n_group,
            p.topk_group,
            p.norm_topk_prob,
            p.routed_scaling_factor};
  }
  ops::MoeShape shape(int64_t T) const {
    return {T,
            H,
            E,
            p.top_k,
            I,
            Is,
            p.activation == ops::MoeActivation::swiglu,
            w.shared_expert_gate.defined(),
            w.router_bias.defined(),
            w.router.dtype(),
            w.up[0].dtype(),
            w.shared_up.dtype()};
  }
};

TEST(Moe, MatchesReference) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (bool nemotron : {true, false}) {
      for (DType dtype : {DType::f32, DType::bf16}) {
        Layer layer(*ob, rng, nemotron, dtype, 48, 16, 24, 40);
        for (int64_t T : {1, 13, 64}) {
          SCOPED_TRACE(::testing::Message() << (nemotron ? "nemotron_h" : "qwen3_5_moe") << " "
                                            << dtype_name(dtype) << " T=" << T);
          Tensor x = random_tensor(*ob, rng, DType::f32, {T, layer.H}, 2.0);
          Tensor out = nan_tensor(*ob, {T, layer.H});
          ops::moe(ob->be(), x, layer.w, layer.p, out);
          ref::MoeRouting routing;
          std::vector<double> want = ref::moe(layer.config(), T, layer.H, layer.rw, values(x), &routing);
          const Kept k = kept_rows(values(out), want, routing, T, layer.H);
          EXPECT_GE(static_cast<int64_t>(k.got.size()), std::max<int64_t>(0, T - 2) * layer.H);
          EXPECT_TRUE(all_close(k.got, k.want, kAtolScale * max_abs(want), kRtol));
        }
      }
    }
  }
}

// Packed experts (every bit width; the expert products are packed matmuls, decode and prefill paths) against
// the reference on the dequantized values, on every backend (the reference backend's packed matmul included),
// plus the planned workspace and a token alone vs in its step, bitwise.
TEST(Moe, PackedExpertsMatchReference) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (bool nemotron : {true, false})
      for (int32_t bits : {2, 3, 4, 5, 6, 8}) {
        Layer layer(*ob, rng, nemotron, DType::bf16, 64, 8, 32, 40, bits);
        for (int64_t T : {1, 13, 40}) {
          SCOPED_TRACE(::testing::Message()
                       << (nemotron ? "nemotron_h" : "qwen3_5_moe") << " bits=" << bits << " T=" << T);
          Tensor x = random_tensor(*ob, rng, DType::f32, {T, layer.H}, 2.0);
          Tensor out = nan_tensor(*ob, {T, layer.H});
          ops::MoeShape shape = layer.shape(T);
          shape.weight_dtype = layer.w.up[0];
          int64_t peak = pool_peak_during(ob->pool(), [&] { ops::moe(ob->be(), x, layer.w, layer.p, out); });
          // (at 13 tokens no expert may get the 8 rows that take the matmul's larger panels, which the plan
          // counts)
          if (T != 13) {
            EXPECT_TRUE(workspace_ok(peak, ops::moe_workspace_bytes(ob->be(), shape)));
          }
          ref::MoeRouting routing;
          std::vector<double> want = ref::moe(layer.config(), T, layer.H, layer.rw, values(x), &routing);
          const Kept k = kept_rows(values(out), want, routing, T, layer.H);
          EXPECT_GE(static_cast<int64_t>(k.got.size()), std::max<int64_t>(0, T - 2) * layer.H);
          EXPECT_TRUE(all_close(k.got, k.want, kAtolScale * max_abs(want), kRtol));
          if (T != 64) continue;
          for (int64_t t : {0, 63}) {
            Tensor one = nan_tensor(*ob, {1, layer.H});
            ops::moe(ob->be(), x.slice(0, t, 1), layer.w, layer.p, one);
            EXPECT_TRUE(batch_invariant(*ob, one, out.slice(0, t, 1))) << "token " << t;
          }
        }
      }
  }
}

// A token's output is the same bits alone (decode) as inside a 37-token step, whatever else is routed with
// it.
TEST(Moe, TokenAloneEqualsTokenInStepBitwise) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (bool nemotron : {true, false}) {
      Layer layer(*ob, rng, nemotron, DType::bf16, 40, 8, 16, 24);
      Tensor x = random_tensor(*ob, rng, DType::f32, {37, layer.H}, 2.0);
      Tensor all = nan_tensor(*ob, {37, layer.H});
      ops::moe(ob->be(), x, layer.w, layer.p, all);
      for (int64_t t : {0, 17, 36}) {
        Tensor one = nan_tensor(*ob, {1, layer.H});
        ops::moe(ob->be(), x.slice(0, t, 1), layer.w, layer.p, one);
        EXPECT_TRUE(batch_invariant(*ob, one, all.slice(0, t, 1))) << "token " << t;
      }
    }
  }
}

// The pool's peak is the plan (f32 weights: no matmul panels; bf16 with 64 tokens: panels in every phase).
TEST(Moe, WorkspaceIsPlanned) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (bool nemotron : {true, false}) {
      for (DType dtype : {DType::f32, DType::bf16}) {
        Layer layer(*ob, rng, nemotron, dtype, 64, 8, 32, 48);
        for (int64_t T : {1, 64}) {
          Tensor x = random_tensor(*ob, rng, DType::f32, {T, layer.H}, 2.0);
          Tensor out = nan_tensor(*ob, {T, layer.H});
          int64_t peak = pool_peak_during(ob->pool(), [&] { ops::moe(ob->be(), x, layer.w, layer.p, out); });
          const int64_t planned = ops::moe_workspace_bytes(ob->be(), layer.shape(T));
          EXPECT_TRUE(workspace_ok(peak, planned))
              << (nemotron ? "nemotron_h " : "qwen3_5_moe ") << dtype_name(dtype) << " T=" << T;
        }
      }
    }
  }
}

// The grouping on every backend against std::stable_sort of the pairs by expert (an independent oracle):
// offsets, the token of every grouped row and the grouped row of every pair, with pairs routed outside
// [0, E) dropped (position −1). 700 tokens × 6 slots is 4,200 pairs: several of the CUDA kernel's rounds.
TEST(MoeGroup, StableByExpertThenToken) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (int64_t E : {int64_t{1}, int64_t{7}, int64_t{300}, kMoeMaxExperts}) {
      const int64_t T = 700, k = 6, R = T * k;
      std::vector<double> ids(static_cast<size_t>(R));
      for (int64_t p = 0; p < R; ++p) {
        const double u = rng.uniform(0.0, 1.0);
        // a few ids out of range; E = 7 crowds the experts (long runs of one expert in a round)
        ids[static_cast<size_t>(p)] = u < 0.01   ? -1
                                      : u < 0.02 ? double(E)
                                                 : std::floor(rng.uniform(0.0, 1.0) * double(E));
      }
      Tensor indices = tensor_from(*ob, DType::i32, {T, k}, ids);
      Tensor offsets = Tensor::empty(ob->pool(), DType::i32, {E + 1}, "offsets");
      Tensor token = Tensor::empty(ob->pool(), DType::i32, {R}, "token");
      Tensor position = Tensor::empty(ob->pool(), DType::i32, {R}, "position");
      ob->be().moe_group(MoeGroupArgs{indices.ptr<const int32_t>(), T, k, E, offsets.ptr<int32_t>(),
                                      token.ptr<int32_t>(), position.ptr<int32_t>()});
      ob->be().synchronize();
      std::vector<int64_t> order;  // the kept pairs, stably by expert
      for (int64_t p = 0; p < R; ++p)
        if (ids[p] >= 0 && ids[p] < E) order.push_back(p);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return ids[a] < ids[b]; });
      std::vector<int32_t> want_pos(static_cast<size_t>(R), -1);
      for (size_t i = 0; i < order.size(); ++i) {
        want_pos[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);
        ASSERT_EQ(token.ptr<int32_t>()[i], order[i] / k) << "E=" << E << " grouped row " << i;
      }
      for (int64_t p = 0; p < R; ++p)
        ASSERT_EQ(position.ptr<int32_t>()[p], want_pos[p]) << "E=" << E << " pair " << p;
      for (int64_t e = 0; e <= E; ++e) {
        const int64_t before =
            std::count_if(order.begin(), order.end(), [&](int64_t p) { return ids[p] < e; });
        ASSERT_EQ(offsets.ptr<int32_t>()[e], before) << "E=" << E << " expert " << e;
      }
    }
  }
}

// Many experts and many pairs through the whole block: 512 experts, top-8 (softmax family) and top-3 of 4
// groups (sigmoid family), 300 tokens (2,400 pairs), against the float64 reference on every backend.
TEST(Moe, ManyExpertsMatchReference) {
  KEEL_TEST_RNG(rng);
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    for (bool nemotron : {true, false}) {
      Layer layer(*ob, rng, nemotron, DType::bf16, 32, kMoeMaxExperts, 16, 16);
      if (!nemotron) layer.p.top_k = 8;
      const int64_t T = 300;
      Tensor x = random_tensor(*ob, rng, DType::f32, {T, layer.H}, 2.0);
      Tensor out = nan_tensor(*ob, {T, layer.H});
      ops::moe(ob->be(), x, layer.w, layer.p, out);
      ref::MoeRouting routing;
      std::vector<double> want = ref::moe(layer.config(), T, layer.H, layer.rw, values(x), &routing);
      const Kept k = kept_rows(values(out), want, routing, T, layer.H);
      EXPECT_GE(static_cast<int64_t>(k.got.size()), (T - 10) * layer.H) << "near-ties are rare";
      EXPECT_TRUE(all_close(k.got, k.want, kAtolScale * max_abs(want), kRtol))
          << (nemotron ? "nemotron_h" : "qwen3_5_moe");
    }
  }
}

TEST(Moe, RejectsBadArguments) {
  KEEL_TEST_RNG(rng);
  OpBackend& ob = *op_backends().front();
  Layer layer(ob, rng, true, DType::f32, 16, 8, 8, 8);
  Tensor x = random_tensor(ob, rng, DType::f32, {3, 16});
  Tensor out = nan_tensor(ob, {3, 16});
  layer.w.down[5] = random_tensor(ob, rng, DType::f32, {16, 9});
  try {
    ops::moe(ob.be(), x, layer.w, layer.p, out);
    FAIL() << "expected invalid_argument";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("experts.5.down_proj"), std::string::npos) << e.what();
  }
  Tensor idx = tensor_from(ob, DType::i32, {3, 1}, {0, 8, 1});
  Tensor wts = tensor_from(ob, DType::f32, {3, 1}, {1, 1, 1});
  EXPECT_THROW(ops::moe_experts(ob.be(), x, idx, wts, layer.w, ops::MoeActivation::relu2, out), Error);
  // a token choosing one expert twice (an expert holds at most one row per token)
  Tensor twice = tensor_from(ob, DType::i32, {3, 2}, {0, 1, 2, 2, 3, 4});
  Tensor wts2 = tensor_from(ob, DType::f32, {3, 2}, {1, 1, 1, 1, 1, 1});
  EXPECT_THROW(ops::moe_experts(ob.be(), x, twice, wts2, layer.w, ops::MoeActivation::relu2, out), Error);
  ops::MoeParams bad = layer.p;
  bad.n_group = 3;  // 8 experts do not split into 3 groups
  Routed unused{Tensor::empty(ob.pool(), DType::i32, {3, 3}, "i"),
                Tensor::empty(ob.pool(), DType::f32, {3, 3}, "w")};
  Tensor logits = random_tensor(ob, rng, DType::f32, {3, 8});
  EXPECT_THROW(ops::moe_route(ob.be(), logits, Tensor(), bad, unused.indices, unused.weights), Error);
}

}  // namespace
