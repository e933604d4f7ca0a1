// Checks shared by the qwen3_5 and qwen3_5_moe tests beyond model_test_util.h: the Gated DeltaNet and gated
// attention blocks alone, fed transformers' recorded block input (reference.safetensors: deltanet.* and
// attn.* of the first layer of each kind) and compared with its recorded float64 output and final states;
// load errors with the fixture's own model_type spelling (qwen3_5_text / qwen3_5_moe_text).
#pragma once
#include <string>
#include <vector>

#include "load/config.h"
#include "model_test_util.h"
#include "models/blocks/attention.h"
#include "models/blocks/gated_deltanet.h"
#include "models/blocks/rope.h"
#include "models/registry.h"
#include "models/weights.h"

namespace keel::testing {

// ‖got − want‖ / ‖want‖ over a tensor's elements (rows may be strided).
inline double relative_l2(const Tensor& got, const std::vector<double>& want) {
  const int64_t rows = got.dim(0), per_row = got.numel() / rows;
  double num = 0, den = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < per_row; ++i) {
      const double w = want[static_cast<size_t>(r * per_row + i)],
                   g = static_cast<const float*>(got.at(r))[i];
      num += (g - w) * (g - w);
      den += w * w;
    }
  return std::sqrt(num / den);
}

// A block of the fixture's layer `layer`, run over the recorded input in pieces of `chunk` tokens (one
// sequence).
struct BlockHarness {
  MemoryPool pool{"cpu", int64_t{1} << 30};
  CpuBackend be{pool, 2};
  ModelConfig cfg;
  WeightStore store;
  Reference ref;
  explicit BlockHarness(const std::string& name)
      : cfg(models::load_model_config(fixture_dir(name))),
        store(WeightStore::open(fixture_dir(name))),
        ref(name) {}

  Tensor input(const std::string& key) {
    const std::vector<double> x = ref.f(key);
    Tensor t = Tensor::empty(pool, DType::f32, {ref.dim(key, 0), ref.dim(key, 1)}, "block input");
    for (size_t i = 0; i < x.size(); ++i) t.ptr<float>()[i] = static_cast<float>(x[i]);
    return t;
  }

  // Runs `block` over x in pieces; rope: the step's table per piece (attention), else none.
  Tensor run(const models::Block& block, const Tensor& x, int64_t chunk, models::LayerCache& cache,
             const models::RopeTable* rope) {
    const int64_t T = x.dim(0), d = x.dim(1);
    Tensor out = Tensor::empty(pool, DType::f32, {T, d}, "block output");
    std::vector<models::LayerCache> caches(1);
    block.init_cache(caches[0], T, be);
    for (int64_t b = 0; b < T; b += chunk) {
      const int64_t n = std::min(chunk, T - b);
      models::StepContext ctx;
      ctx.be = &be;
      ctx.T = n;
      ctx.items.push_back(models::ItemRows{0, n, b, &caches});
      if (rope) {
        std::vector<int32_t> pos(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) pos[static_cast<size_t>(j)] = static_cast<int32_t>(b + j);
        ctx.rope_table = Tensor::empty(pool, DType::f32, {n, rope->rotary_dim()}, "rope table");
        Tensor positions = Tensor::empty(pool, DType::i32, {n}, "positions");
        be.upload(pos.data(), 4 * n, positions);
        rope->fill(be, positions, ctx.rope_table);
      }
      Tensor o = out.slice(0, b, n);
      block.forward(ctx, 0, x.slice(0, b, n), o);
    }
    cache = caches[0];
    return out;
  }
};

// The first DeltaNet layer's block: output, conv state and recurrent state against the reference, whole and
// in pieces that straddle the conv kernel and the 64-token chunks. Relative L2 ≤ 1e-5 (f32 against float64;
// the measured error is printed).
inline void check_deltanet_block(const std::string& name, int64_t layer) {
  BlockHarness h(name);
  ASSERT_EQ(h.cfg.layers[static_cast<size_t>(layer)].kind, LayerKind::gated_deltanet);
  models::WeightBinder w(h.store, h.be, "model.layers." + std::to_string(layer) + ".linear_attn.");
  models::GatedDeltaNetBlock block(h.cfg.gated_deltanet, static_cast<float>(h.cfg.rms_norm_eps),
                                   models::bind_gated_deltanet(w, h.cfg.gated_deltanet, h.cfg.hidden_size));
  const Tensor x = h.input("deltanet.input");
  const std::vector<double> want = h.ref.f("deltanet.output"), conv = h.ref.f("deltanet.conv_state"),
                            state = h.ref.f("deltanet.state");
  for (int64_t chunk : {x.dim(0), int64_t{1}, int64_t{3}, int64_t{63}, int64_t{65}}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    models::LayerCache cache;
    const Tensor out = h.run(block, x, chunk, cache, nullptr);
    const double e_out = relative_l2(out, want), e_conv = relative_l2(cache.conv, conv),
                 e_state = relative_l2(cache.recurrent, state);
    std::printf("%s deltanet layer %lld, chunk %lld: relative L2 output %.2e, conv state %.2e, state %.2e\n",
                name.c_str(), static_cast<long long>(layer), static_cast<long long>(chunk), e_out, e_conv,
                e_state);
    EXPECT_LE(e_out, 1e-5);
    EXPECT_LE(e_conv, 1e-6);  // a copy of bf16-weight projections: rounding only
    EXPECT_LE(e_state, 1e-5);
  }
}

// The first full-attention layer's block (query ‖ gate per head, q/k norms × (1 + w), partial RoPE, GQA,
// sigmoid output gate): output against the reference, whole and in pieces.
inline void check_gated_attention_block(const std::string& name, int64_t layer) {
  BlockHarness h(name);
  ASSERT_EQ(h.cfg.layers[static_cast<size_t>(layer)].kind, LayerKind::attention);
  const AttentionConfig& a = h.cfg.attention;
  models::AttentionSpec s;
  s.hidden = h.cfg.hidden_size;
  s.n_q = a.num_attention_heads;
  s.n_kv = a.num_key_value_heads;
  s.head_dim = a.head_dim;
  s.qk_norm = true;
  s.qk_norm_scale = ops::NormScale::one_plus_weight;
  s.norm_eps = static_cast<float>(h.cfg.rms_norm_eps);
  s.rope = true;
  s.output_gate = a.output_gate;
  ASSERT_TRUE(s.output_gate);
  models::WeightBinder w(h.store, h.be, "model.layers." + std::to_string(layer) + ".self_attn.");
  models::AttentionBlock block(s, models::bind_attention(w, s));
  const models::RopeTable rope(*a.rope, a.head_dim);
  EXPECT_EQ(rope.rotary_dim(), 8);  // 32 · 0.25
  const Tensor x = h.input("attn.input");
  const std::vector<double> want = h.ref.f("attn.output");
  for (int64_t chunk : {x.dim(0), int64_t{1}, int64_t{65}}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    models::LayerCache cache;
    const Tensor out = h.run(block, x, chunk, cache, &rope);
    const double e = relative_l2(out, want);
    std::printf("%s attention layer %lld, chunk %lld: relative L2 output %.2e\n", name.c_str(),
                static_cast<long long>(layer), static_cast<long long>(chunk), e);
    EXPECT_LE(e, 1e-5);
  }
}

// Missing tensor, wrong shape (both naming the tensor), unsupported model_type (naming it).
inline void check_qwen3_5_load_errors(const std::string& name, const std::string& model_type,
                                      const std::vector<std::string>& victims) {
  for (const std::string& victim : victims) {
    SCOPED_TRACE(victim);
    {
      TempDir dir;
      write_edited_fixture(name, dir.path(), [&](const std::string& n, auto&, auto&) { return n != victim; });
      expect_load_error(dir.path(), ErrorCode::invalid_file, {victim});
    }
    {
      TempDir dir;
      write_edited_fixture(
          name, dir.path(), [&](const std::string& n, std::vector<int64_t>& shape, std::string& bytes) {
            if (n == victim) {  // one row fewer
              bytes.resize(bytes.size() / static_cast<size_t>(shape[0]) * static_cast<size_t>(shape[0] - 1));
              --shape[0];
            }
            return true;
          });
      expect_load_error(dir.path(), ErrorCode::invalid_file, {victim, "shape"});
    }
  }
  TempDir dir;
  write_edited_fixture(
      name, dir.path(), [](const std::string&, auto&, auto&) { return true; },
      [&](std::string cfg) {
        const std::string key = "\"model_type\": \"" + model_type + "\"";
        const size_t at = cfg.find(key);
        EXPECT_NE(at, std::string::npos) << key;
        if (at != std::string::npos) cfg.replace(at, key.size(), "\"model_type\": \"qwen3_6_text\"");
        return cfg;
      });
  expect_load_error(dir.path(), ErrorCode::unsupported, {"qwen3_6_text"});
}

}  // namespace keel::testing
