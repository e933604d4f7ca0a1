// The second oracle for the stateful and heavy ops: the intermediates transformers 5.17 recorded in float64
// for the tiny reference models (tests/fixtures/README.md). Each op gets the recorded inputs and the model's
// bf16 weights and must reproduce the recorded outputs — so a misreading of the math that the float64
// references in the other tests share (they were written from the same reading) cannot pass twice.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../fixtures/model_fixtures.h"
#include "load/weight_store.h"
#include "op_harness.h"
#include "ops/attention.h"
#include "ops/gated_deltanet.h"
#include "ops/moe.h"
#include "ops/ssd_scan.h"

using namespace keel;
using namespace keel::testing;

namespace {

// The same allowances as the per-op tests against float64 (see each op's test for the reasons).
constexpr double kSsdAtol = 5e-6, kSsdRtol = 5e-5;
constexpr double kDeltaAtol = 3e-5, kDeltaRtol = 1e-4;
constexpr double kAttnAtol = 2e-6, kAttnRtol = 2e-5;
constexpr double kMoeAtol = 2e-6, kMoeRtol = 2e-5;

struct Fixture {
  std::string dir;
  WeightStore model, ref;
  nlohmann::json config, meta;
  explicit Fixture(const std::string& name)
      : dir(std::string(KEEL_SOURCE_DIR) + "/tests/fixtures/" + name),
        model(WeightStore::open(dir)),
        ref(WeightStore::open_file(dir + "/reference.safetensors")) {
    std::ifstream(dir + "/config.json") >> config;
    std::ifstream(dir + "/reference.json") >> meta;
    share_with_backends(model);
    share_with_backends(ref);
  }
  int layer(const char* kind) const { return meta["first_layer_of_kind"][kind].get<int>(); }
  std::vector<double> f(const std::string& key) const { return values(ref.get(key)); }
};

// out = zeros of `shape` f32 on the backend.
Tensor zeros(OpBackend& ob, std::initializer_list<int64_t> shape) {
  Tensor t = Tensor::empty(ob.pool(), DType::f32, shape, "zeros");
  std::fill_n(t.ptr<float>(), t.numel(), 0.0f);
  return t;
}

// Prompt splits for the pieces-vs-recorded checks: a single token, lengths off every chunk and tile size.
const int64_t kPieces[] = {1, 40, 7, 100, 151};  // 299 tokens

}  // namespace

TEST(FixtureSsdScan, ReproducesNemotronHMamba2) {
  Fixture fx("nemotron_h");
  const std::string w = "backbone.layers." + std::to_string(fx.layer("mamba2")) + ".mixer.";
  Tensor x = fx.ref.get("mamba2.x"), dt = fx.ref.get("mamba2.dt_raw"), B = fx.ref.get("mamba2.B"),
         C = fx.ref.get("mamba2.C");
  const int64_t L = x.dim(0), H = x.dim(1), P = x.dim(2), N = B.dim(2);
  const auto& lim = fx.config["time_step_limit"];
  ASSERT_EQ(lim[0].get<double>(), 0.0);  // the fixture's limit is (0, inf): no clamp
  const ops::SsdScanParams p{fx.config["chunk_size"].get<int64_t>()};
  std::vector<double> want_y = fx.f("mamba2.y"), want_s = fx.f("mamba2.ssm_state");
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Tensor state = zeros(*ob, {H, P, N}), y = nan_tensor(*ob, {L, H, P});
    ops::ssd_scan(ob->be(), x, dt, B, C, fx.model.get(w + "A_log"), fx.model.get(w + "dt_bias"),
                  fx.model.get(w + "D"), state, y, p);
    EXPECT_TRUE(all_close(y, want_y, kSsdAtol * max_abs(want_y), kSsdRtol));
    EXPECT_TRUE(all_close(state, want_s, kSsdAtol * max_abs(want_s), kSsdRtol));

    Tensor state2 = zeros(*ob, {H, P, N}), y2 = nan_tensor(*ob, {L, H, P});
    int64_t t0 = 0;
    for (int64_t len : kPieces) {
      Tensor yp = y2.slice(0, t0, len);
      ops::ssd_scan(ob->be(), x.slice(0, t0, len), dt.slice(0, t0, len), B.slice(0, t0, len),
                    C.slice(0, t0, len), fx.model.get(w + "A_log"), fx.model.get(w + "dt_bias"),
                    fx.model.get(w + "D"), state2, yp, p);
      t0 += len;
    }
    ASSERT_EQ(t0, L);
    EXPECT_TRUE(all_close(y2, want_y, kSsdAtol * max_abs(want_y), kSsdRtol));
    EXPECT_TRUE(all_close(state2, want_s, kSsdAtol * max_abs(want_s), kSsdRtol));
  }
}

// transformers records q and k already repeated to the value heads; the op takes the key heads, so the test
// hands it every rep-th recorded head. If the reference repeated with tile instead of repeat_interleave,
// heads 2kh and 2kh+1 would differ and the op's h / (Hv/Hk) mapping would read the wrong key head.
void check_deltanet(const std::string& name) {
  Fixture fx(name);
  const std::string w = "model.layers." + std::to_string(fx.layer("deltanet")) + ".linear_attn.";
  Tensor q = fx.ref.get("deltanet.q"), k = fx.ref.get("deltanet.k"), v = fx.ref.get("deltanet.v");
  Tensor a = fx.ref.get("deltanet.a"), b = fx.ref.get("deltanet.b");
  const int64_t L = q.dim(0), Hv = q.dim(1), Dk = q.dim(2), Dv = v.dim(2);
  const int64_t Hk = fx.config["linear_num_key_heads"].get<int64_t>(), rep = Hv / Hk;
  for (int64_t h = 0; h < Hv; ++h)
    EXPECT_TRUE(bitwise_equal(q.slice(1, h, 1), q.slice(1, h / rep * rep, 1))) << "value head " << h;
  Tensor qk = q.strided_view({L, Hk, Dk}, {q.stride_bytes(0), rep * Dk * 4, 4});
  Tensor kk = k.strided_view({L, Hk, Dk}, {k.stride_bytes(0), rep * Dk * 4, 4});
  std::vector<double> want_o = fx.f("deltanet.core_out"), want_s = fx.f("deltanet.state");
  for (OpBackend* ob : op_backends())
    for (ops::GatedDeltaNetForm form : {ops::GatedDeltaNetForm::recurrent, ops::GatedDeltaNetForm::chunked}) {
      SCOPED_TRACE(ob->name);
      SCOPED_TRACE(form == ops::GatedDeltaNetForm::chunked ? "chunked WY form (chunk 64)" : "recurrent form");
      const ops::GatedDeltaNetParams params{64, true, 1e-6f, form};
      Tensor state = zeros(*ob, {Hv, Dk, Dv}), out = nan_tensor(*ob, {L, Hv, Dv});
      ops::gated_deltanet(ob->be(), qk, kk, v, a, b, fx.model.get(w + "A_log"), fx.model.get(w + "dt_bias"),
                          state, out, params);
      EXPECT_TRUE(all_close(out, want_o, kDeltaAtol * max_abs(want_o), kDeltaRtol));
      EXPECT_TRUE(all_close(state, want_s, kDeltaAtol * max_abs(want_s), kDeltaRtol));

      Tensor state2 = zeros(*ob, {Hv, Dk, Dv}), out2 = nan_tensor(*ob, {L, Hv, Dv});
      int64_t t0 = 0;
      for (int64_t len : kPieces) {
        Tensor op = out2.slice(0, t0, len);
        ops::gated_deltanet(ob->be(), qk.slice(0, t0, len), kk.slice(0, t0, len), v.slice(0, t0, len),
                            a.slice(0, t0, len), b.slice(0, t0, len), fx.model.get(w + "A_log"),
                            fx.model.get(w + "dt_bias"), state2, op, params);
        t0 += len;
      }
      EXPECT_TRUE(all_close(out2, want_o, kDeltaAtol * max_abs(want_o), kDeltaRtol));
      EXPECT_TRUE(all_close(state2, want_s, kDeltaAtol * max_abs(want_s), kDeltaRtol));
    }
}

TEST(FixtureGatedDeltaNet, ReproducesQwen3_5) {
  check_deltanet("qwen3_5");
}
TEST(FixtureGatedDeltaNet, ReproducesQwen3_5Moe) {
  check_deltanet("qwen3_5_moe");
}

// Recorded q, k, v (after norms and RoPE) with k and v as the cache: one shot and chunked prefill reproduce
// the recorded core output, and the chunks give the one-shot bits.
TEST(FixtureAttention, ReproducesEveryModel) {
  for (const std::string& name : model_fixture_names()) {
    SCOPED_TRACE(name);
    Fixture fx(name);
    Tensor q = fx.ref.get("attn.q"), k = fx.ref.get("attn.k"), v = fx.ref.get("attn.v");
    const int64_t L = q.dim(0), Hq = q.dim(1), Dv = v.dim(2);
    const float scale = fx.ref.get("attn.scaling").ptr<const float>()[0];
    std::vector<double> want = fx.f("attn.core_out");
    for (OpBackend* ob : op_backends()) {
      SCOPED_TRACE(ob->name);
      Tensor out = nan_tensor(*ob, {L, Hq, Dv});
      ops::attention(ob->be(), q, k, v, out, {0, scale});
      EXPECT_TRUE(all_close(out, want, kAttnAtol * max_abs(want), kAttnRtol));
      Tensor chunked = nan_tensor(*ob, {L, Hq, Dv});
      int64_t t0 = 0;
      for (int64_t len : kPieces) {
        Tensor o = chunked.slice(0, t0, len);
        ops::attention(ob->be(), q.slice(0, t0, len), k, v, o, {t0, scale});
        t0 += len;
      }
      EXPECT_TRUE(bitwise_equal(chunked, out));
    }
  }
}

// The router on the recorded logits picks the recorded experts (sorted by selection score, as the fixture is)
// with the recorded weights; the whole block on the recorded input gives the recorded output.
void check_moe(const std::string& name, bool nemotron) {
  Fixture fx(name);
  const int l = fx.layer("moe");
  const std::string pre = nemotron ? "backbone.layers." + std::to_string(l) + ".mixer."
                                   : "model.layers." + std::to_string(l) + ".mlp.";
  ops::MoeParams p;
  ops::MoeWeights w;
  int64_t E = 0;
  if (nemotron) {
    E = fx.config["n_routed_experts"].get<int64_t>();
    p = {ops::MoeRouter::sigmoid_grouped,
         ops::MoeActivation::relu2,
         fx.config["num_experts_per_tok"].get<int64_t>(),
         fx.config["n_group"].get<int64_t>(),
         fx.config["topk_group"].get<int64_t>(),
         fx.config["norm_topk_prob"].get<bool>(),
         fx.config["routed_scaling_factor"].get<float>()};
    w.router_bias = fx.model.get(pre + "gate.e_score_correction_bias");
    w.shared_up = fx.model.get(pre + "shared_experts.up_proj.weight");
    w.shared_down = fx.model.get(pre + "shared_experts.down_proj.weight");
  } else {
    E = fx.config["num_experts"].get<int64_t>();
    p = {ops::MoeRouter::softmax_topk, ops::MoeActivation::swiglu,
         fx.config["num_experts_per_tok"].get<int64_t>()};
    w.shared_up = fx.model.get(pre + "shared_expert.up_proj.weight");
    w.shared_gate = fx.model.get(pre + "shared_expert.gate_proj.weight");
    w.shared_down = fx.model.get(pre + "shared_expert.down_proj.weight");
    w.shared_expert_gate = fx.model.get(pre + "shared_expert_gate.weight");
  }
  w.router = fx.model.get(pre + "gate.weight");
  for (int64_t e = 0; e < E; ++e) {
    const std::string ex = pre + "experts." + std::to_string(e) + ".";
    w.up.push_back(fx.model.get(ex + "up_proj.weight"));
    w.down.push_back(fx.model.get(ex + "down_proj.weight"));
    if (!nemotron) w.gate.push_back(fx.model.get(ex + "gate_proj.weight"));
  }
  Tensor logits = fx.ref.get("moe.router_logits"), x = fx.ref.get("moe.input");
  const int64_t L = x.dim(0), H = x.dim(1), k = p.top_k;
  Tensor want_ids = fx.ref.get("moe.topk_ids"), want_w = fx.ref.get("moe.topk_weights");
  std::vector<double> want_out = fx.f("moe.output");
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Tensor ids = Tensor::empty(ob->pool(), DType::i32, {L, k}, "ids");
    Tensor wts = Tensor::empty(ob->pool(), DType::f32, {L, k}, "weights");
    ops::moe_route(ob->be(), logits, w.router_bias, p, ids, wts);
    int mismatched = 0;
    for (int64_t i = 0; i < L * k; ++i)
      mismatched += ids.ptr<int32_t>()[i] != want_ids.ptr<const int64_t>()[i];
    EXPECT_EQ(mismatched, 0) << "expert choices differing from transformers'";
    EXPECT_TRUE(all_close(wts, values(want_w), 1e-6, 1e-5));

    Tensor out = nan_tensor(*ob, {L, H});
    ops::moe(ob->be(), x, w, p, out);
    EXPECT_TRUE(all_close(out, want_out, kMoeAtol * max_abs(want_out), kMoeRtol));
  }
}

TEST(FixtureMoe, ReproducesNemotronH) {
  check_moe("nemotron_h", true);
}
TEST(FixtureMoe, ReproducesQwen3_5Moe) {
  check_moe("qwen3_5_moe", false);
}
