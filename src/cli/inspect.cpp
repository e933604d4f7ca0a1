// keel inspect -m DIR [--json] [--ctx N] [--chunk N]: what a model folder holds and what it will cost — layer
// kinds, parameters and weight bytes (from the safetensors headers), persistent state per sequence, KV bytes
// per token.
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "backend/cpu/cpu_backend.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/sysmem.h"
#include "load/config.h"
#include "load/state_spec.h"
#include "load/weight_store.h"
#include "models/loader.h"
#include "models/registry.h"

namespace keel::cli {

namespace {

struct InspectOptions {
  std::string dir;
  bool json = false;
  int64_t ctx = -1;    // tokens; -1: max_position_embeddings
  int64_t chunk = -1;  // tokens per prefill step; -1: not asked
};

// The model's closed-form transient bytes for a prefill step of `chunk` tokens (logits for its last) on all
// cores.
int64_t planned_step_bytes(const std::string& dir, int64_t chunk) {
  MemoryPool pool("cpu", std::numeric_limits<int64_t>::max());
  CpuBackend be(pool, 0);
  models::LoadedModel m = models::load_model(dir, be);
  StepShapeItem step{chunk, 0, 1};
  return m.model->step_transient_bytes({&step, 1});
}

nlohmann::json inspect_report(const InspectOptions& o) {
  ModelConfig cfg = models::load_model_config(o.dir);
  WeightStore weights = WeightStore::open(o.dir);
  StateSpec state = compute_state_spec(cfg);

  nlohmann::json r;
  r["model"] = o.dir;
  r["model_type"] = cfg.model_type;
  r["config_model_type"] = cfg.config_model_type;
  r["num_layers"] = cfg.num_layers();
  nlohmann::json layers = nlohmann::json::array(), ffn = nlohmann::json::array(),
                 counts = nlohmann::json::object();
  for (const LayerSpec& l : cfg.layers) {
    layers.push_back(layer_kind_name(l.kind));
    ffn.push_back(l.ffn ? nlohmann::json(layer_kind_name(*l.ffn)) : nlohmann::json());
  }
  for (LayerKind k :
       {LayerKind::mamba2, LayerKind::gated_deltanet, LayerKind::attention, LayerKind::mlp, LayerKind::moe})
    if (cfg.has(k)) counts[std::string(layer_kind_name(k))] = cfg.count(k);
  r["layers"] = layers;
  r["ffn"] = ffn;
  r["layer_counts"] = counts;
  r["hidden_size"] = cfg.hidden_size;
  r["vocab_size"] = cfg.vocab_size;
  r["max_position_embeddings"] = cfg.max_position_embeddings;
  r["tie_word_embeddings"] = cfg.tie_word_embeddings;

  r["tensors"] = weights.size();
  r["shards"] = weights.shards().size();
  r["parameters"] = weights.parameter_count();
  r["weight_bytes"] = weights.total_bytes();
  nlohmann::json by_dtype = nlohmann::json::object();
  for (const auto& [dtype, bytes] : weights.bytes_by_dtype())
    by_dtype[std::string(dtype_name(dtype))] = bytes;
  r["weight_bytes_by_dtype"] = by_dtype;
  // MLX-quantized folders: the config's block, and the bytes of the packed modules (words + scales + biases;
  // what Weight::nbytes counts, and what stays resident).
  r["quantization"] = nullptr;
  if (cfg.quantization) {
    int64_t packed = 0, modules = 0, overrides = 0;
    for (const std::string& n : weights.names()) {
      if (!n.ends_with(".scales")) continue;
      const std::string base = n.substr(0, n.size() - 7);
      for (const char* part : {".weight", ".scales", ".biases"})
        if (const WeightInfo* info = weights.find(base + part)) packed += info->record->nbytes;
      ++modules;
    }
    for (const auto& entry : cfg.quantization->modules) overrides += entry.second.has_value();
    r["quantization"] = {{"mode", "affine"},
                         {"bits", cfg.quantization->base.bits},
                         {"group_size", cfg.quantization->base.group_size},
                         {"module_entries", cfg.quantization->modules.size()},
                         {"module_overrides", overrides},
                         {"packed_modules", modules},
                         {"packed_bytes", packed}};
  }

  r["state_bytes_per_sequence"] = state.state_bytes_per_sequence;
  r["recurrent_state_bytes_per_sequence"] = state.recurrent_bytes_per_sequence;
  r["conv_state_bytes_per_sequence"] = state.conv_bytes_per_sequence;
  r["kv_bytes_per_token"] = state.kv_bytes_per_token;
  int64_t ctx = o.ctx >= 0 ? o.ctx : cfg.max_position_embeddings;
  r["ctx"] = ctx;
  r["state_bytes_at_ctx"] = state.bytes_at_context(ctx);
  r["chunk"] = o.chunk >= 0 ? nlohmann::json(o.chunk) : nlohmann::json();
  r["step_workspace_bytes"] = nullptr;
  if (o.chunk > 0) {
    try {
      r["step_workspace_bytes"] = planned_step_bytes(o.dir, o.chunk);
    } catch (const Error& e) {  // a folder keel cannot run is still described
      r["step_workspace_error"] = e.what();
    }
  }
  return r;
}

void print_text(const nlohmann::json& r, std::ostream& out) {
  auto bytes = [](const nlohmann::json& v) {
    int64_t b = v.get<int64_t>();
    return fmt::format("{} ({} bytes)", format_bytes(b), b);
  };
  out << fmt::format("model          {}\n", r["model"].get<std::string>());
  out << fmt::format("model_type     {} (config.json: {})\n", r["model_type"].get<std::string>(),
                     r["config_model_type"].get<std::string>());
  out << fmt::format("hidden_size    {}   vocab_size {}   max positions {}   tied embeddings {}\n",
                     r["hidden_size"].get<int64_t>(), r["vocab_size"].get<int64_t>(),
                     r["max_position_embeddings"].get<int64_t>(),
                     r["tie_word_embeddings"].get<bool>() ? "yes" : "no");
  std::string counts;
  for (const auto& [kind, n] : r["layer_counts"].items())
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n.get<int64_t>(), kind);
  out << fmt::format("layers         {} ({})\n", r["num_layers"].get<int64_t>(), counts);
  for (size_t i = 0; i < r["layers"].size(); ++i) {
    const nlohmann::json& ffn = r["ffn"][i];
    out << fmt::format("  {:>3}  {}{}\n", i, r["layers"][i].get<std::string>(),
                       ffn.is_null() ? "" : " + " + ffn.get<std::string>());
  }
  out << fmt::format("parameters     {} ({} tensors in {} file{})\n", r["parameters"].get<int64_t>(),
                     r["tensors"].get<int64_t>(), r["shards"].get<int64_t>(),
                     r["shards"].get<int64_t>() == 1 ? "" : "s");
  out << fmt::format("weight bytes   {}\n", bytes(r["weight_bytes"]));
  for (const auto& [dtype, b] : r["weight_bytes_by_dtype"].items())
    out << fmt::format("  {:<6} {}\n", dtype, bytes(b));
  if (!r["quantization"].is_null()) {
    const nlohmann::json& q = r["quantization"];
    out << fmt::format("MLX affine     {}-bit, group {}; {} packed modules, {} per-module entries\n",
                       q["bits"].get<int>(), q["group_size"].get<int>(), q["packed_modules"].get<int64_t>(),
                       q["module_entries"].get<int64_t>());
    out << fmt::format("  packed       {}\n", bytes(q["packed_bytes"]));
  }
  out << fmt::format("state per sequence (fp32)  {}  [recurrent {}, conv {}]\n",
                     bytes(r["state_bytes_per_sequence"]),
                     format_bytes(r["recurrent_state_bytes_per_sequence"].get<int64_t>()),
                     format_bytes(r["conv_state_bytes_per_sequence"].get<int64_t>()));
  out << fmt::format("KV per token (fp32)        {}\n", bytes(r["kv_bytes_per_token"]));
  out << fmt::format("state at {} tokens    {}\n", r["ctx"].get<int64_t>(), bytes(r["state_bytes_at_ctx"]));
  std::string chunk = r["chunk"].is_null() ? "N" : std::to_string(r["chunk"].get<int64_t>());
  out << (r.contains("step_workspace_error")
              ? fmt::format("planned step workspace for --chunk {}: n/a ({})\n", chunk,
                            r["step_workspace_error"].get<std::string>())
          : r["step_workspace_bytes"].is_null()
              ? std::string("planned step workspace: give --chunk N\n")
              : fmt::format("planned step workspace for --chunk {} ({} threads): {}\n", chunk,
                            std::thread::hardware_concurrency(), bytes(r["step_workspace_bytes"])));
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("inspect", "Describe a model folder: layers, parameters, weight and state bytes");
  auto opts = std::make_shared<InspectOptions>();
  cmd->add_option("-m,--model", opts->dir, "Hugging Face model folder (config.json + safetensors)")
      ->required();
  cmd->add_flag("--json", opts->json, "Print one JSON object instead of text");
  cmd->add_option("--ctx", opts->ctx,
                  "Context length in tokens for the state estimate (default: max positions)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--chunk", opts->chunk, "Prefill chunk in tokens for the step workspace estimate")
      ->check(CLI::PositiveNumber);
  cmd->callback([opts] {
    nlohmann::json report = inspect_report(*opts);
    if (opts->json) {
      std::cout << report.dump(2) << "\n";
    } else {
      print_text(report, std::cout);
    }
    std::cout.flush();
  });
}

}  // namespace keel::cli
