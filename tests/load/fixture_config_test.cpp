// keel's model-file reading against transformers' own, on the reference fixtures (tests/fixtures/<model>/,
// written by tools/make_reference.py): reference.json records "config_summary" (transformers 5.x's
// config.to_dict() after its __post_init__), the shapes of the states it computed, and parameter counts; keel
// must read the same.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../fixtures/model_fixtures.h"
#include "load/config.h"
#include "load/state_spec.h"
#include "load/weight_store.h"
#include "models/registry.h"

using namespace keel;
using namespace keel::testing;
namespace fs = std::filesystem;

namespace {

double as_double(const nlohmann::json& v) {
  if (v.is_string() && v == "inf") return std::numeric_limits<double>::infinity();  // json.dump(default=repr)
  return v.get<double>();
}

std::vector<std::string> kinds_as_transformers_names(const ModelConfig& c) {
  std::vector<std::string> out;
  bool nemotron = c.model_type == "nemotron_h";
  for (const LayerSpec& l : c.layers) {
    switch (l.kind) {
      case LayerKind::mamba2:
      case LayerKind::gated_deltanet:
        out.push_back("linear_attention");
        break;
      case LayerKind::attention:
        out.push_back("full_attention");
        break;
      default:
        out.push_back(std::string(layer_kind_name(l.kind)));
    }
    if (nemotron)
      EXPECT_TRUE(l.kind != LayerKind::gated_deltanet);
    else
      EXPECT_TRUE(l.kind != LayerKind::mamba2);
  }
  return out;
}

void compare(const ModelConfig& c, const nlohmann::json& s) {
  auto has = [&](const char* k) { return s.contains(k) && !s[k].is_null(); };
  // Each key transformers recorded must equal keel's value.
  auto same = [&](const char* k, const nlohmann::json& keel_value) {
    if (!has(k)) return;
    EXPECT_EQ(keel_value, s[k]) << k;
  };
  auto same_number = [&](const char* k, double keel_value) {
    if (!has(k)) return;
    EXPECT_DOUBLE_EQ(keel_value, as_double(s[k])) << k;
  };
  EXPECT_EQ(c.config_model_type, s["model_type"].get<std::string>());
  same("vocab_size", c.vocab_size);
  same("hidden_size", c.hidden_size);
  same("num_hidden_layers", c.num_layers());
  same("num_attention_heads", c.attention.num_attention_heads);
  same("num_key_value_heads", c.attention.num_key_value_heads);
  same("head_dim", c.attention.head_dim);
  if (c.has(LayerKind::mlp)) same("intermediate_size", c.mlp.intermediate_size);
  same("layer_types", kinds_as_transformers_names(c));
  same("layers_block_type", kinds_as_transformers_names(c));
  same("tie_word_embeddings", c.tie_word_embeddings);
  same_number("rms_norm_eps", c.rms_norm_eps);
  same_number("layer_norm_epsilon", c.rms_norm_eps);
  if (has("rope_parameters")) {
    const nlohmann::json& r = s["rope_parameters"];
    ASSERT_TRUE(c.attention.rope.has_value());
    EXPECT_EQ(c.attention.rope->type, r.value("rope_type", "default"));
    EXPECT_DOUBLE_EQ(c.attention.rope->theta, as_double(r["rope_theta"]));
    EXPECT_DOUBLE_EQ(c.attention.rope->partial_rotary_factor,
                     as_double(r.value("partial_rotary_factor", 1.0)));
    EXPECT_EQ(nlohmann::json(c.attention.rope->mrope_section),
              r.value("mrope_section", nlohmann::json::array()));
  }
  const GatedDeltaNetConfig& g = c.gated_deltanet;
  same("linear_num_key_heads", g.num_key_heads);
  same("linear_num_value_heads", g.num_value_heads);
  same("linear_key_head_dim", g.key_head_dim);
  same("linear_value_head_dim", g.value_head_dim);
  same("linear_conv_kernel_dim", g.conv_kernel);
  const Mamba2Config& m = c.mamba2;
  same("mamba_num_heads", m.num_heads);
  same("mamba_head_dim", m.head_dim);
  same("n_groups", m.n_groups);
  same("ssm_state_size", m.ssm_state_size);
  same("conv_kernel", m.conv_kernel);
  same("chunk_size", m.chunk_size);
  same_number("time_step_min", m.time_step_min);
  if (has("time_step_limit")) {
    EXPECT_DOUBLE_EQ(m.time_step_limit.first, as_double(s["time_step_limit"][0]));
    EXPECT_EQ(m.time_step_limit.second, as_double(s["time_step_limit"][1]));
  }
  const MoeConfig& e = c.moe;
  same("n_routed_experts", e.num_experts);
  same("num_experts", e.num_experts);
  same("num_experts_per_tok", e.num_experts_per_tok);
  same("moe_intermediate_size", e.moe_intermediate_size);
  same("moe_shared_expert_intermediate_size", e.shared_expert_intermediate_size);
  same("shared_expert_intermediate_size", e.shared_expert_intermediate_size);
  same("n_group", e.n_group);
  same("topk_group", e.topk_group);
  same_number("routed_scaling_factor", e.routed_scaling_factor);
  same("norm_topk_prob", e.norm_topk_prob);
  same("mlp_hidden_act", c.mlp.hidden_act);
  same("hidden_act", c.mlp.hidden_act);
}

// Every model fixture (tests/fixtures/models.txt) must have its reference.json with the fields each test
// reads: a missing one fails the test, it is not skipped.
nlohmann::json reference_json(const fs::path& dir) {
  fs::path ref = dir / "reference.json";
  EXPECT_TRUE(fs::exists(ref)) << ref.string();
  EXPECT_TRUE(fs::exists(dir / "config.json")) << dir.string();
  if (!fs::exists(ref)) return nlohmann::json::object();
  return nlohmann::json::parse(std::ifstream(ref));
}

}  // namespace

TEST(FixtureConfigs, MatchTransformersReading) {
  for (const std::string& name : model_fixture_names()) {
    const fs::path dir = model_fixture_path(name);
    SCOPED_TRACE(dir.string());
    nlohmann::json meta = reference_json(dir);
    ASSERT_TRUE(meta.contains("config_summary") && meta["config_summary"].is_object());
    compare(models::load_model_config(dir.string()), meta["config_summary"]);
  }
}

namespace {

int64_t numel(const nlohmann::json& shape) {
  int64_t n = 1;
  for (const auto& d : shape) n *= d.get<int64_t>();
  return n;
}

}  // namespace

// State bytes from keel's state spec against the shapes of the states transformers produced for the same
// model (reference.json "tensors": mamba2.ssm_state [H, P, N], mamba2.conv_state [K−1, conv_dim],
// deltanet.state [Hv, Dk, Dv], deltanet.conv_state [K−1, 2·Hk·Dk + Hv·Dv], attn.k [L, Hkv, D]), all fp32.
TEST(FixtureConfigs, StateSpecMatchesRecordedStateShapes) {
  for (const std::string& name : model_fixture_names()) {
    const fs::path dir = model_fixture_path(name);
    SCOPED_TRACE(dir.string());
    nlohmann::json meta = reference_json(dir);
    ASSERT_TRUE(meta.contains("tensors"));
    const nlohmann::json& t = meta["tensors"];
    ModelConfig c = models::load_model_config(dir.string());
    // Every state layer kind the config has was recorded (first_layer_of_kind), so each is compared below.
    EXPECT_EQ(c.has(LayerKind::mamba2), t.contains("mamba2.ssm_state"));
    EXPECT_EQ(c.has(LayerKind::gated_deltanet), t.contains("deltanet.state"));
    EXPECT_EQ(c.has(LayerKind::attention), t.contains("attn.k"));
    if (t.contains("mamba2.ssm_state")) {
      EXPECT_EQ(mamba2_ssm_state_bytes(c.mamba2), numel(t["mamba2.ssm_state"]["shape"]) * 4);
      EXPECT_EQ(mamba2_conv_state_bytes(c.mamba2), numel(t["mamba2.conv_state"]["shape"]) * 4);
    }
    if (t.contains("deltanet.state")) {
      EXPECT_EQ(gated_deltanet_state_bytes(c.gated_deltanet), numel(t["deltanet.state"]["shape"]) * 4);
      EXPECT_EQ(gated_deltanet_conv_state_bytes(c.gated_deltanet),
                numel(t["deltanet.conv_state"]["shape"]) * 4);
    }
    if (t.contains("attn.k")) {
      const nlohmann::json& k = t["attn.k"]["shape"];  // [L, Hkv, D]
      EXPECT_EQ(attention_kv_bytes_per_token(c.attention), 2 * k[1].get<int64_t>() * k[2].get<int64_t>() * 4);
    }
    ASSERT_TRUE(meta.contains("tied_embeddings"));
    EXPECT_EQ(c.tie_word_embeddings, meta["tied_embeddings"]);
  }
}

// The published multimodal layout holds the same text weights as qwen3_5/ under model.language_model.*: after
// rename_prefix the names and the bytes must be identical, and the count must be what transformers recorded.
TEST(FixtureWeights, MultimodalFolderHoldsTheTextModelUnderAPrefix) {
  fs::path mm = model_fixture_path("qwen3_5_multimodal"), text = model_fixture_path("qwen3_5");
  ASSERT_TRUE(fs::exists(mm / "reference.json")) << mm.string();
  ASSERT_TRUE(fs::exists(text / "model.safetensors")) << text.string();
  nlohmann::json meta = nlohmann::json::parse(std::ifstream(mm / "reference.json"));
  WeightStore a = WeightStore::open(mm.string());
  WeightStore b = WeightStore::open(text.string());
  EXPECT_EQ(a.parameter_count(), meta["parameters"]);
  EXPECT_GT(a.rename_prefix("model.language_model.", "model."), 0);
  int64_t text_params = 0;
  for (const std::string& name : a.names()) {
    if (name.rfind("model.visual.", 0) == 0) continue;
    text_params += a.find(name)->record->numel;
    ASSERT_TRUE(b.has(name)) << name;
    Tensor x = a.get(name), y = b.get(name, std::vector<int64_t>(b.find(name)->record->shape));
    ASSERT_EQ(x.dtype(), y.dtype()) << name;
    ASSERT_EQ(x.nbytes(), y.nbytes()) << name;
    EXPECT_EQ(std::memcmp(x.data(), y.data(), static_cast<size_t>(x.nbytes())), 0) << name;
  }
  ASSERT_TRUE(meta.contains("parameters_language_model_and_lm_head"));
  EXPECT_EQ(text_params, meta["parameters_language_model_and_lm_head"]);
  EXPECT_EQ(text_params, b.parameter_count());
}
