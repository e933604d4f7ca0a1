// The second oracle for the basic ops: transformers 5.17's float64 intermediates for the tiny reference
// models (tests/fixtures/README.md). Embedding, final norm + lm_head, both gated norms, both convs (with
// their state), and q/k through projection, q/k norm and RoPE must reproduce what transformers recorded from
// the same bf16 weights, so a misreading shared by an op and its float64 reference cannot pass twice.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../fixtures/model_fixtures.h"
#include "load/weight_store.h"
#include "op_harness.h"
#include "ops/conv1d.h"
#include "ops/embedding.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/rope.h"

using namespace keel;
using namespace keel::testing;

namespace {

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

Tensor prompt_ids(OpBackend& ob, const Fixture& fx) {
  Tensor ids64 = fx.ref.get("prompt_ids");
  return tensor_from(ob, DType::i32, {ids64.dim(0)}, values(ids64), "prompt ids");
}

Tensor positions(OpBackend& ob, int64_t L) {
  std::vector<double> p(static_cast<size_t>(L));
  for (int64_t t = 0; t < L; ++t) p[static_cast<size_t>(t)] = static_cast<double>(t);
  return tensor_from(ob, DType::i32, {L}, p, "positions");
}

Tensor zeros(OpBackend& ob, std::initializer_list<int64_t> shape) {
  Tensor t = Tensor::empty(ob.pool(), DType::f32, shape, "zeros");
  std::fill_n(t.ptr<float>(), t.numel(), 0.0f);
  return t;
}

// Pieces of the 299-token prompt: one token, lengths off every chunk size, one shorter than the conv kernel.
const int64_t kPieces[] = {1, 2, 40, 7, 100, 149};

// f32 ops on inputs rounded from the float64 run: a few roundings of 2^-24 each: rtol 1e-5, atol
// 1e-6·max|ref|.
constexpr double kRtol = 1e-5, kAtolScale = 1e-6;

}  // namespace

// hidden_states[0] is the embedding output: bf16 rows widened, exactly.
TEST(FixtureBasicOps, EmbeddingIsHiddenStateZero) {
  for (const std::string& name : model_fixture_names()) {
    SCOPED_TRACE(name);
    Fixture fx(name);
    Tensor table =
        fx.model.get(name == "nemotron_h" ? "backbone.embeddings.weight" : "model.embed_tokens.weight");
    Tensor h = fx.ref.get("hidden_states");
    for (OpBackend* ob : op_backends()) {
      SCOPED_TRACE(ob->name);
      Tensor ids = prompt_ids(*ob, fx);
      Tensor out = nan_tensor(*ob, {ids.dim(0), table.dim(1)});
      ops::embedding(ob->be(), table, ids, out);
      EXPECT_TRUE(all_close(out, values(h.select(0)), 0, 0));
    }
  }
}

// final_norm_out = RMSNorm(hidden_states[n]) (qwen3_5: · (1 + w)); logprobs = log_softmax(final_norm_out ·
// Wᵀ).
TEST(FixtureBasicOps, FinalNormAndLmHead) {
  struct Model {
    const char* name;
    const char* norm;
    const char* head;
    ops::NormScale scale;
    const char* eps_key;
  };
  const Model models[] = {
      {"qwen3", "model.norm.weight", "model.embed_tokens.weight", ops::NormScale::weight, "rms_norm_eps"},
      {"qwen3_5", "model.norm.weight", "lm_head.weight", ops::NormScale::one_plus_weight, "rms_norm_eps"},
      {"llama", "model.norm.weight", "lm_head.weight", ops::NormScale::weight, "rms_norm_eps"},
      {"nemotron_h", "backbone.norm_f.weight", "lm_head.weight", ops::NormScale::weight,
       "layer_norm_epsilon"}};
  for (const Model& m : models) {
    SCOPED_TRACE(m.name);
    Fixture fx(m.name);
    Tensor h = fx.ref.get("hidden_states");
    Tensor last = h.select(h.dim(0) - 1);
    const int64_t L = last.dim(0);
    Tensor head = fx.model.get(m.head);
    const int64_t V = head.dim(0);
    std::vector<double> want_norm = fx.f("final_norm_out"), want_lp = fx.f("logprobs");
    for (OpBackend* ob : op_backends()) {
      SCOPED_TRACE(ob->name);
      Tensor normed = nan_tensor(*ob, {L, last.dim(1)});
      ops::rms_norm(ob->be(), last, fx.model.get(m.norm), normed,
                    {fx.config[m.eps_key].get<float>(), m.scale});
      EXPECT_TRUE(all_close(normed, want_norm, kAtolScale * max_abs(want_norm), kRtol));
      // lm_head from the recorded final_norm_out; log-softmax in double here.
      Tensor logits = nan_tensor(*ob, {L, V});
      ops::matmul(ob->be(), fx.ref.get("final_norm_out"), head, logits);
      std::vector<double> lv = values(logits), lp(lv.size());
      for (int64_t t = 0; t < L; ++t) {
        double mx = -INFINITY, s = 0;
        for (int64_t v = 0; v < V; ++v) mx = std::max(mx, lv[t * V + v]);
        for (int64_t v = 0; v < V; ++v) s += std::exp(lv[t * V + v] - mx);
        for (int64_t v = 0; v < V; ++v) lp[t * V + v] = lv[t * V + v] - mx - std::log(s);
      }
      // Logits of magnitude ~10 from 64-term f32 dots: |Δ log-prob| ≤ 1e-5 (the spec's bound is 1e-3).
      EXPECT_TRUE(all_close(lp, want_lp, 1e-5, 0));
    }
  }
}

// nemotron_h Mamba2: xBC_preconv → conv (bias) + silu = concat(x, B, C); conv_state = last K−1 pre-conv rows;
// gated_norm_out = RMSNorm_groups(y ⊙ silu(z)) ⊙ w. Whole prompt and in pieces.
TEST(FixtureBasicOps, Mamba2ConvAndGatedNorm) {
  Fixture fx("nemotron_h");
  const std::string w = "backbone.layers." + std::to_string(fx.layer("mamba2")) + ".mixer.";
  Tensor pre = fx.ref.get("mamba2.xBC_preconv");
  const int64_t L = pre.dim(0), Cd = pre.dim(1), K = fx.config["conv_kernel"].get<int64_t>();
  const int64_t I = fx.config["mamba_num_heads"].get<int64_t>() * fx.config["mamba_head_dim"].get<int64_t>();
  const int64_t G = fx.config["n_groups"].get<int64_t>();
  std::vector<double> want = fx.f("mamba2.x"), b = fx.f("mamba2.B"), c = fx.f("mamba2.C");
  // concat(x, B, C) per token
  std::vector<double> want_conv;
  const int64_t GN = static_cast<int64_t>(b.size()) / L;
  for (int64_t t = 0; t < L; ++t) {
    want_conv.insert(want_conv.end(), want.begin() + t * I, want.begin() + (t + 1) * I);
    want_conv.insert(want_conv.end(), b.begin() + t * GN, b.begin() + (t + 1) * GN);
    want_conv.insert(want_conv.end(), c.begin() + t * GN, c.begin() + (t + 1) * GN);
  }
  std::vector<double> want_state = fx.f("mamba2.conv_state"), want_norm = fx.f("mamba2.gated_norm_out");
  const float eps = fx.config["layer_norm_epsilon"].get<float>();
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Tensor state = zeros(*ob, {K - 1, Cd}), out = nan_tensor(*ob, {L, Cd});
    int64_t t0 = 0;
    for (int64_t len : kPieces) {
      Tensor piece = out.slice(0, t0, len);
      ops::causal_conv1d(ob->be(), pre.slice(0, t0, len), fx.model.get(w + "conv1d.weight"),
                         fx.model.get(w + "conv1d.bias"), state, piece, {true});
      t0 += len;
    }
    ASSERT_EQ(t0, L);
    EXPECT_TRUE(all_close(out, want_conv, kAtolScale * max_abs(want_conv), kRtol));
    EXPECT_TRUE(all_close(state, want_state, 0, 0)) << "conv_state is the last K−1 inputs, exactly";

    Tensor y = fx.ref.get("mamba2.y").reshape({L, I}), z = fx.ref.get("mamba2.z");
    Tensor normed = nan_tensor(*ob, {L, I});
    ops::gated_rms_norm(ob->be(), y, z, fx.model.get(w + "norm.weight"), normed,
                        {eps, I / G, ops::GateOrder::gate_then_norm});
    EXPECT_TRUE(all_close(normed, want_norm, kAtolScale * max_abs(want_norm), kRtol));
  }
}

// qwen3_5 Gated DeltaNet: qkv_preconv → conv (no bias) + silu gives q, k (Hk heads, recorded repeated to Hv)
// and v; conv_state; gated_norm_out = (RMSNorm_head(core_out) ⊙ w) ⊙ silu(z) with w used as is.
TEST(FixtureBasicOps, DeltaNetConvAndGatedNorm) {
  Fixture fx("qwen3_5");
  const std::string w = "model.layers." + std::to_string(fx.layer("deltanet")) + ".linear_attn.";
  Tensor pre = fx.ref.get("deltanet.qkv_preconv");
  const int64_t L = pre.dim(0), Cd = pre.dim(1), K = 4;
  const int64_t Hk = fx.config["linear_num_key_heads"].get<int64_t>(),
                Hv = fx.config["linear_num_value_heads"].get<int64_t>(),
                Dk = fx.config["linear_key_head_dim"].get<int64_t>(),
                Dv = fx.config["linear_value_head_dim"].get<int64_t>();
  std::vector<double> q = fx.f("deltanet.q"), k = fx.f("deltanet.k"), v = fx.f("deltanet.v");
  std::vector<double> want_conv;  // [L, q (Hk·Dk) | k (Hk·Dk) | v (Hv·Dv)], key head hk = value head hk·Hv/Hk
  for (int64_t t = 0; t < L; ++t) {
    for (const auto* src : {&q, &k})
      for (int64_t hk = 0; hk < Hk; ++hk)
        for (int64_t i = 0; i < Dk; ++i) want_conv.push_back((*src)[(t * Hv + hk * (Hv / Hk)) * Dk + i]);
    for (int64_t i = 0; i < Hv * Dv; ++i) want_conv.push_back(v[t * Hv * Dv + i]);
  }
  ASSERT_EQ(static_cast<int64_t>(want_conv.size()), L * Cd);
  std::vector<double> want_state = fx.f("deltanet.conv_state"), want_norm = fx.f("deltanet.gated_norm_out");
  const float eps = fx.config["rms_norm_eps"].get<float>();
  for (OpBackend* ob : op_backends()) {
    SCOPED_TRACE(ob->name);
    Tensor state = zeros(*ob, {K - 1, Cd}), out = nan_tensor(*ob, {L, Cd});
    int64_t t0 = 0;
    for (int64_t len : kPieces) {
      Tensor piece = out.slice(0, t0, len);
      ops::causal_conv1d(ob->be(), pre.slice(0, t0, len), fx.model.get(w + "conv1d.weight"), Tensor(), state,
                         piece, {true});
      t0 += len;
    }
    EXPECT_TRUE(all_close(out, want_conv, kAtolScale * max_abs(want_conv), kRtol));
    EXPECT_TRUE(all_close(state, want_state, 0, 0));

    Tensor normed = nan_tensor(*ob, {L, Hv, Dv});
    ops::gated_rms_norm(ob->be(), fx.ref.get("deltanet.core_out"), fx.ref.get("deltanet.z"),
                        fx.model.get(w + "norm.weight"), normed, {eps, Dv, ops::GateOrder::norm_then_gate});
    EXPECT_TRUE(all_close(normed, want_norm, kAtolScale * max_abs(want_norm), kRtol));
  }
}

// q and k as fed to attention: projection (matmul), per-head q/k RMSNorm (qwen3: w, qwen3_5: 1 + w, llama:
// none), RoPE at positions 0..L−1 (qwen3_5: 8 of 32 dims). The fixtures' angles were computed in float64;
// keel follows transformers' float32 angles, which differ by up to L·2^-24 ≈ 2e-5 rad here: atol
// 3e-5·max|ref|.
TEST(FixtureBasicOps, QueryKeyProjectionNormAndRope) {
  struct Model {
    const char* name;
    bool qk_norm, one_plus, gated_q;
  };
  for (const Model& m : {Model{"qwen3", true, false, false}, Model{"llama", false, false, false},
                         Model{"qwen3_5", true, true, true}}) {
    SCOPED_TRACE(m.name);
    Fixture fx(m.name);
    const std::string w = "model.layers." + std::to_string(fx.layer("attention")) + ".self_attn.";
    const auto& rp = fx.config["rope_parameters"];
    const int64_t H = fx.config["num_attention_heads"].get<int64_t>(),
                  Hkv = fx.config["num_key_value_heads"].get<int64_t>(),
                  D = fx.config["head_dim"].get<int64_t>();
    const ops::RopeParams rope{rp["rope_theta"].get<double>(),
                               ops::rope_rotary_dim(D, rp.value("partial_rotary_factor", 1.0))};
    const ops::RmsNormParams norm{fx.config["rms_norm_eps"].get<float>(),
                                  m.one_plus ? ops::NormScale::one_plus_weight : ops::NormScale::weight};
    Tensor in = fx.ref.get("attn.input");
    const int64_t L = in.dim(0);
    std::vector<double> want_q = fx.f("attn.q"), want_k = fx.f("attn.k");
    for (OpBackend* ob : op_backends()) {
      SCOPED_TRACE(ob->name);
      Tensor pos = positions(*ob, L);
      Tensor qp = nan_tensor(*ob, {L, H * D * (m.gated_q ? 2 : 1)}), kp = nan_tensor(*ob, {L, Hkv * D});
      ops::matmul(ob->be(), in, fx.model.get(w + "q_proj.weight"), qp);
      ops::matmul(ob->be(), in, fx.model.get(w + "k_proj.weight"), kp);
      Tensor q;
      if (!m.gated_q) {
        q = qp.reshape({L, H, D});
      } else {  // [L, H, 2D]: each head's query is the first D, its gate the last D
        Tensor q2 = qp.reshape({L, H, 2 * D});
        q = q2.strided_view({L, H, D}, {q2.stride_bytes(0), q2.stride_bytes(1), 4});
        EXPECT_TRUE(
            all_close(q, fx.f("attn.q_prenorm"), kAtolScale * max_abs(fx.f("attn.q_prenorm")), kRtol));
        Tensor gate = q2.strided_view({L, H, D}, {q2.stride_bytes(0), q2.stride_bytes(1), 4}, D * 4);
        EXPECT_TRUE(all_close(gate, fx.f("attn.gate"), kAtolScale * max_abs(fx.f("attn.gate")), kRtol));
      }
      Tensor k = kp.reshape({L, Hkv, D});
      Tensor qo = nan_tensor(*ob, {L, H, D}), ko = nan_tensor(*ob, {L, Hkv, D});
      if (m.qk_norm) {
        ops::rms_norm(ob->be(), q, fx.model.get(w + "q_norm.weight"), qo, norm);
        ops::rms_norm(ob->be(), k, fx.model.get(w + "k_norm.weight"), ko, norm);
        ops::rope(ob->be(), qo, pos, qo, rope);
        ops::rope(ob->be(), ko, pos, ko, rope);
      } else {
        ops::rope(ob->be(), q, pos, qo, rope);
        ops::rope(ob->be(), k, pos, ko, rope);
      }
      EXPECT_TRUE(all_close(qo, want_q, 3e-5 * max_abs(want_q), kRtol));
      EXPECT_TRUE(all_close(ko, want_k, 3e-5 * max_abs(want_k), kRtol));
    }
  }
}
