// keel quantize -m DIR -o OUT --bits B --group-size G [--recipe R] [--keep REGEX] [--max-shard-bytes N]: a HF
// folder (bf16/f16/f32) → an MLX affine-quantized folder laid out as mlx-lm saves one (docs/MLX.md):
//   - names and layouts after mlx-lm's `sanitize` per model family: llama/qwen3 as they are
//   (rotary_emb.inv_freq
//     and a tied lm_head dropped); nemotron_h: mtp.* dropped, conv1d [C, 1, K] → [C, K, 1], routed experts
//     stacked as mixer.switch_mlp.fc1 (from up_proj) / fc2 (from down_proj); qwen3_5 / qwen3_5_moe: vision
//     and mtp.* dropped, model.language_model.* → language_model.model.*, other names prefixed
//     language_model., conv1d moved, the decoder norms stored as 1 + w (in the weight's dtype), experts
//     stacked as mlp.switch_mlp.{gate,up,down}_proj;
//   - every Linear/Embedding/SwitchLinear weight whose input is a multiple of the group size quantized by
//     MLX's CPU quantizer (core/quant.h: bit for bit tools/mlx_quantize.py), scales and biases in the
//     weight's dtype; Qwen3.5-MoE routers and shared-expert gates at 8 bits, group 64 (mlx-lm's
//     quant_predicate, a per-module entry); --keep REGEX (searched in the module path) leaves modules in
//     float (`false` entries);
//   - --recipe mixed_2_6 | mixed_3_4 | mixed_3_6 | mixed_4_6: mlx-lm's mixed recipes (mlx_lm/convert.py
//     `mixed_quant_predicate_builder`, `Recipe` below) in place of the model's own predicate, as mlx-lm's
//     quantize_model does (`quant_predicate or getattr(model, "quant_predicate")`): every quantized module
//     gets an entry {group_size, bits, mode: affine}, and --bits is only the block's top-level bits;
//   - config.json + "quantization" {group_size, bits, mode: affine, entries} and its copy
//     "quantization_config"; shards of at most --max-shard-bytes (default 5 GiB, mlx-lm's) named
//     model.safetensors or model-0000i-of-0000N.safetensors with metadata {"format": "mlx"}, and
//     model.safetensors.index.json (metadata.total_size, metadata.total_parameters, sorted weight_map);
//   - the other files of DIR (tokenizer, generation config, chat template) copied as they are.
// The oracle is tools/mlx_convert.py quantize (tests/models/mlx_quantize_test.cpp: the same tensors, bytes
// and config block).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/quant.h"
#include "core/sysmem.h"
#include "load/config.h"
#include "load/json_util.h"
#include "load/weight_store.h"
#include "models/registry.h"

namespace keel::cli {

namespace {

struct QuantizeArgs {
  std::string dir, out, keep, recipe;
  int bits = 4, group_size = 64;
  int64_t max_shard_bytes = int64_t{5} << 30;
};

enum class Family { llama, nemotron_h, qwen3_5 };

// One tensor of the output: its MLX name, the source tensors (several: experts stacked along a new axis 0),
// what is done to them, and its stored dtype and shape.
struct Source {
  std::vector<Tensor> parts;  // stacked in order; one for a plain tensor
  bool plus_one = false;      // Qwen3.5 decoder norms: 1 + w in the weight's dtype
};
enum class Role { plain, words, scales, biases };
struct OutTensor {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  Role role = Role::plain;
  std::string module;  // quantized roles: the module path (the three share its quantization)
  int64_t nbytes() const {
    int64_t n = dtype_info(dtype).block_bytes;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

std::string st_dtype(DType d) {
  switch (d) {
    case DType::f32:
      return "F32";
    case DType::bf16:
      return "BF16";
    case DType::f16:
      return "F16";
    case DType::u32:
      return "U32";
    case DType::i32:
      return "I32";
    case DType::i64:
      return "I64";
    case DType::u8:
      return "U8";
    case DType::i8:
      return "I8";
  }
  return "?";
}

void f32_to_stored(float v, DType d, char* p, int64_t i) {
  switch (d) {
    case DType::bf16:
      reinterpret_cast<uint16_t*>(p)[i] = f32_to_bf16(v);
      break;
    case DType::f16:
      reinterpret_cast<uint16_t*>(p)[i] = f32_to_f16(v);
      break;
    default:
      reinterpret_cast<float*>(p)[i] = v;
      break;
  }
}

std::vector<int64_t> shape_of(const Tensor& t) {
  return std::vector<int64_t>(t.shape().begin(), t.shape().begin() + t.ndim());
}

bool ends_with_any(const std::string& s, std::initializer_list<const char*> suffixes) {
  for (const char* x : suffixes)
    if (s.ends_with(x)) return true;
  return false;
}

// mlx-lm's mixed recipes (mlx_lm/convert.py `mixed_quant_predicate_builder`, as `convert` calls it after
// ml-explore/mlx-lm#449, #506 and #809): low and high bits; the group size is --group-size.
struct RecipeBits {
  const char* name;
  int low, high;
};
constexpr RecipeBits kRecipes[] = {
    {"mixed_2_6", 2, 6}, {"mixed_3_4", 3, 4}, {"mixed_3_6", 3, 6}, {"mixed_4_6", 4, 6}};

std::string recipe_names() {
  std::string s;
  for (const RecipeBits& r : kRecipes) s.append(s.empty() ? "" : ", ").append(r.name);
  return s;
}

const RecipeBits& find_recipe(const std::string& name) {
  for (const RecipeBits& r : kRecipes)
    if (name == r.name) return r;
  throw_error(ErrorCode::invalid_argument, "quantize: unknown --recipe \"{}\" (mlx-lm's recipes: {})",
              name.substr(0, 60), recipe_names());
}

std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> parts;
  size_t b = 0;
  for (size_t e; (e = s.find('.', b)) != std::string::npos; b = e + 1) parts.push_back(s.substr(b, e - b));
  parts.push_back(s.substr(b));
  return parts;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// `mixed_quant_predicate`: the layer index is the path's component at `location` (the first all-digit
// component of the first module path holding "down_proj"; 0 when the path is shorter), n = len(model.layers).
// v_proj / v_a_proj / v_b_proj and down_proj of the layers in the first eighth, the last eighth and every
// third between ((index − n/8) mod 3 = 2, Python's non-negative mod), and every lm_head, take the high bits;
// every other module the low bits.
struct Recipe {
  RecipeBits bits;
  int group_size = 64;
  size_t location = 0;
  int64_t num_layers = 0;

  QuantParams operator()(const std::string& path) const {
    const std::vector<std::string> parts = split_dots(path);
    int64_t index = 0;
    if (parts.size() > location) {
      if (!all_digits(parts[location]))
        throw_error(ErrorCode::unsupported,
                    "quantize: --recipe {}: {} has no layer index at component {} (mlx-lm's int() fails too)",
                    bits.name, path, location);
      index = std::stoll(parts[location]);
    }
    const int64_t n = num_layers, d = index - n / 8;
    const bool more = index < n / 8 || index >= 7 * n / 8 || ((d % 3) + 3) % 3 == 2;
    const auto has = [&](const char* x) { return path.find(x) != std::string::npos; };
    if ((has("v_proj") || has("v_a_proj") || has("v_b_proj")) && more) return {bits.high, group_size};
    if (has("down_proj") && more) return {bits.high, group_size};
    if (has("lm_head")) return {bits.high, group_size};
    return {bits.low, group_size};
  }
};

class Quantizer {
 public:
  Quantizer(const QuantizeArgs& a) : a_(a), store_(WeightStore::open(a.dir)) {}

  void run() {
    const std::string cfg_path = (std::filesystem::path(a_.dir) / "config.json").string();
    config_ = parse_json_lenient(read_text_file(cfg_path, 16 << 20), cfg_path);
    cfg_ = models::load_model_config(a_.dir);
    if (cfg_.quantization)
      throw_error(ErrorCode::invalid_argument, "quantize: {} is already quantized (config.json has {})",
                  a_.dir, config_.contains("quantization") ? "quantization" : "quantization_config");
    family_ = cfg_.model_type == "nemotron_h"                                      ? Family::nemotron_h
              : (cfg_.model_type == "qwen3_5" || cfg_.model_type == "qwen3_5_moe") ? Family::qwen3_5
                                                                                   : Family::llama;
    sanitize();
    plan();
    write();
  }

 private:
  // ---- names and layouts (mlx-lm's sanitize)
  void add(std::string name, Source s) { sources_[std::move(name)] = std::move(s); }

  void sanitize() {
    const std::vector<std::string> names = store_.names();
    for (const std::string& n : names)
      if (n.ends_with(".scales") || store_.get(n).dtype() == DType::u32)
        throw_error(ErrorCode::invalid_argument, "quantize: {} holds packed tensors ({})", a_.dir, n);
    const int64_t E = cfg_.moe.num_experts;
    std::map<std::string, std::vector<Tensor>> stacks;  // MLX name → experts in order
    // <prefix>experts.<e>.<role>.weight → <prefix>switch_mlp.<mlx role>.weight, expert e of the stack
    const std::regex expert(R"(^(.*\.)experts\.(\d+)\.([a-z_]+)\.weight$)");
    auto stack_expert = [&](const std::smatch& m, const Tensor& t) {
      const std::string role = m[3].str();
      const char* to = nullptr;
      if (family_ == Family::nemotron_h)
        to = role == "up_proj" ? "fc1" : role == "down_proj" ? "fc2" : nullptr;
      else if (role == "gate_proj" || role == "up_proj" || role == "down_proj")
        to = role.c_str();
      if (!to) return false;
      const int64_t e = std::stoll(m[2].str());
      if (e < 0 || e >= E) return false;
      std::vector<Tensor>& v = stacks[m[1].str() + "switch_mlp." + to + ".weight"];
      if (static_cast<int64_t>(v.size()) <= e) v.resize(static_cast<size_t>(e + 1));
      v[static_cast<size_t>(e)] = t;
      return true;
    };
    for (const std::string& n : names) {
      Tensor t = store_.get(n);
      std::smatch m;
      if (family_ == Family::llama) {
        if (n.find("rotary_emb.inv_freq") != std::string::npos) continue;
        if (cfg_.tie_word_embeddings && n == "lm_head.weight") continue;
        add(n, {{t}});
        continue;
      }
      if (n.find("mtp.") != std::string::npos) continue;
      std::string name = n;
      if (family_ == Family::qwen3_5) {
        if (n.starts_with("model.visual") || n.starts_with("vision_tower")) continue;
        if (n.starts_with("model.language_model"))
          name = "language_model.model" + n.substr(20);
        else if (!n.starts_with("language_model."))
          name = "language_model." + n;
        if (cfg_.tie_word_embeddings && name == "language_model.lm_head.weight") continue;
      }
      if (name.find("experts.gate_up_proj") != std::string::npos ||
          (name.find(".experts.") != std::string::npos && t.ndim() == 3))
        throw_error(ErrorCode::unsupported,
                    "quantize: fused expert tensors ({}) are not handled; per-expert "
                    "experts.N.*_proj.weight are",
                    n);
      if (std::regex_match(name, m, expert)) {
        if (!stack_expert(m, t))
          throw_error(ErrorCode::unsupported, "quantize: expert tensor {} (role or index not handled)", n);
        continue;
      }
      Source s{{t}};
      if (family_ == Family::qwen3_5 && t.ndim() == 1 &&
          ends_with_any(name, {".input_layernorm.weight", ".post_attention_layernorm.weight",
                               "model.norm.weight", ".q_norm.weight", ".k_norm.weight"}))
        s.plus_one = true;
      add(name, std::move(s));
    }
    for (auto& [name, parts] : stacks) {
      if (static_cast<int64_t>(parts.size()) != E)
        throw_error(ErrorCode::invalid_file, "quantize: {} stacks {} experts, the config has {}", name,
                    parts.size(), E);
      for (size_t e = 0; e < parts.size(); ++e)
        if (!parts[e].defined())
          throw_error(ErrorCode::invalid_file, "quantize: expert {} of {} is missing", e, name);
      add(name, {parts});
    }
  }

  // ---- what is quantized, and the output tensors
  bool quantizable(const std::string& name, const Source& s) const {
    if (!name.ends_with(".weight") || s.parts[0].ndim() < 2) return false;
    const std::string mod = name.substr(0, name.size() - 7);
    if (mod.find("conv1d") != std::string::npos || mod.ends_with("norm")) return false;
    if (family_ == Family::nemotron_h && mod.ends_with("mixer.gate")) return false;  // MoEGate: a parameter
    return true;
  }

  // The recipe's layer-index position and layer count, from the module paths (sources_ is sorted; in every
  // family here the index sits at the same component of every down_proj path, so the first is any).
  void make_recipe() {
    Recipe r{find_recipe(a_.recipe), a_.group_size, 0, cfg_.num_layers()};
    auto it = std::find_if(sources_.begin(), sources_.end(),
                           [](const auto& kv) { return kv.first.find("down_proj") != std::string::npos; });
    if (it == sources_.end())
      throw_error(ErrorCode::unsupported,
                  "quantize: --recipe {} needs down_proj modules and {} has none (mlx-lm: \"Model does not "
                  "have expected keys for mixed quant.\")",
                  a_.recipe, a_.dir);
    const std::vector<std::string> parts = split_dots(it->first);
    // Python's `for layer_location, k in enumerate(...): if k.isdigit(): break` (the last index if none is).
    r.location = parts.size() - 1;
    for (size_t i = 0; i < parts.size(); ++i)
      if (all_digits(parts[i])) {
        r.location = i;
        break;
      }
    recipe_ = r;
  }

  void plan() {
    quant_ = nlohmann::json{{"group_size", a_.group_size}, {"bits", a_.bits}, {"mode", "affine"}};
    if (!a_.recipe.empty()) make_recipe();
    const std::regex keep(a_.keep.empty() ? std::string("$^") : a_.keep);
    for (auto& [name, s] : sources_) {
      const Tensor& t0 = s.parts[0];
      std::vector<int64_t> shape = shape_of(t0);
      if (s.parts.size() > 1) shape.insert(shape.begin(), static_cast<int64_t>(s.parts.size()));
      if (name.find("conv1d.weight") != std::string::npos && shape.size() == 3 && shape[1] == 1 &&
          shape[2] != 1)
        shape = {shape[0], shape[2], 1};  // [C, 1, K] → [C, K, 1]: the same bytes
      const std::string mod = name.ends_with(".weight") ? name.substr(0, name.size() - 7) : std::string();
      QuantParams p{0, 0};
      if (quantizable(name, s)) {
        if (!a_.keep.empty() && std::regex_search(mod, keep)) {
          quant_[mod] = false;
        } else {
          // The recipe replaces the model's own predicate (mlx_lm/utils.py quantize_model).
          nlohmann::json entry;
          if (recipe_) {
            p = (*recipe_)(mod);
            entry = {{"group_size", p.group_size}, {"bits", p.bits}, {"mode", "affine"}};
          } else if (family_ == Family::qwen3_5 && cfg_.moe.num_experts > 0 &&
                     (mod.ends_with("mlp.gate") || mod.ends_with("shared_expert_gate"))) {
            p = {8, 64};
            entry = {{"group_size", p.group_size}, {"bits", p.bits}};
          } else {
            p = {a_.bits, a_.group_size};
          }
          if (shape.back() % p.group_size != 0) {
            p = {0, 0};
          } else if (!entry.is_null()) {
            quant_[mod] = entry;
          }
        }
      }
      if (p.bits == 0) {
        out_.push_back({name, t0.dtype(), shape, Role::plain, {}});
        continue;
      }
      if (t0.dtype() != DType::bf16 && t0.dtype() != DType::f16 && t0.dtype() != DType::f32)
        throw_error(ErrorCode::unsupported, "quantize: {} is {}", name, dtype_name(t0.dtype()));
      params_[mod] = p;
      std::vector<int64_t> ws = shape, ss = shape;
      ws.back() = shape.back() * p.bits / 32;
      ss.back() = shape.back() / p.group_size;
      out_.push_back({mod + ".weight", DType::u32, ws, Role::words, mod});
      out_.push_back({mod + ".scales", t0.dtype(), ss, Role::scales, mod});
      out_.push_back({mod + ".biases", t0.dtype(), ss, Role::biases, mod});
      source_of_[mod] = name;
    }
    std::sort(out_.begin(), out_.end(),
              [](const OutTensor& x, const OutTensor& y) { return x.name < y.name; });
  }

  // ---- bytes
  struct Packed {
    std::string words, scales, biases;
  };

  // Quantizes every row of the module's source (experts in order).
  Packed quantize_module(const std::string& mod) const {
    const QuantParams p = params_.at(mod);
    const Source& s = sources_.at(source_of_.at(mod));
    const DType d = s.parts[0].dtype();
    const int64_t k = s.parts[0].dim(-1), groups = k / p.group_size, words = k * p.bits / 32;
    int64_t rows = 0;
    for (const Tensor& t : s.parts) rows += t.numel() / k;
    const int64_t eb = dtype_info(d).block_bytes;
    Packed out;
    out.words.resize(static_cast<size_t>(rows * words * 4));
    out.scales.resize(static_cast<size_t>(rows * groups * eb));
    out.biases.resize(out.scales.size());
    std::vector<float> row(static_cast<size_t>(k)), sc(static_cast<size_t>(groups)), bi(sc.size());
    int64_t r = 0;
    for (const Tensor& t : s.parts) {
      const char* base = static_cast<const char*>(t.data());
      for (int64_t i = 0; i < t.numel() / k; ++i, ++r) {
        for (int64_t c = 0; c < k; ++c) row[static_cast<size_t>(c)] = stored_f32(base + i * k * eb, d, c);
        quant::quantize_row(row.data(), k, p.group_size, p.bits,
                            reinterpret_cast<uint32_t*>(out.words.data()) + r * words, sc.data(), bi.data());
        for (int64_t g = 0; g < groups; ++g) {
          f32_to_stored(sc[static_cast<size_t>(g)], d, out.scales.data(), r * groups + g);
          f32_to_stored(bi[static_cast<size_t>(g)], d, out.biases.data(), r * groups + g);
        }
      }
    }
    return out;
  }

  std::string plain_bytes(const OutTensor& o) const {
    const Source& s = sources_.at(o.name);
    std::string b;
    for (const Tensor& t : s.parts)
      b.append(static_cast<const char*>(t.data()), static_cast<size_t>(t.nbytes()));
    if (s.plus_one) {
      const DType d = s.parts[0].dtype();
      for (int64_t i = 0; i < s.parts[0].numel(); ++i)
        f32_to_stored(stored_f32(b.data(), d, i) + 1.0f, d, b.data(), i);
    }
    return b;
  }

  void write() {
    // Shards: tensors in name order, a new shard when the next one would pass the limit (mlx-lm's
    // make_shards).
    std::vector<std::vector<const OutTensor*>> shards(1);
    int64_t in_shard = 0, total = 0, params = 0;
    for (const OutTensor& o : out_) {
      if (in_shard > 0 && in_shard + o.nbytes() > a_.max_shard_bytes) shards.emplace_back(), in_shard = 0;
      shards.back().push_back(&o);
      in_shard += o.nbytes(), total += o.nbytes();
      params += o.nbytes() / dtype_info(o.dtype).block_bytes;
    }
    std::filesystem::create_directories(a_.out);
    nlohmann::json weight_map = nlohmann::json::object();
    std::map<std::string, Packed> cache;  // a module's three tensors, until the last of them is written
    for (size_t si = 0; si < shards.size(); ++si) {
      const std::string file = shards.size() == 1
                                   ? std::string("model.safetensors")
                                   : fmt::format("model-{:05d}-of-{:05d}.safetensors", si + 1, shards.size());
      nlohmann::json header = nlohmann::json::object();
      header["__metadata__"] = {{"format", "mlx"}};
      int64_t off = 0;
      for (const OutTensor* o : shards[si]) {
        header[o->name] = {
            {"dtype", st_dtype(o->dtype)}, {"shape", o->shape}, {"data_offsets", {off, off + o->nbytes()}}};
        off += o->nbytes();
        weight_map[o->name] = file;
      }
      std::string h = header.dump();
      h.append((8 - h.size() % 8) % 8, ' ');
      const std::string path = (std::filesystem::path(a_.out) / file).string();
      std::ofstream f(path, std::ios::binary);
      const uint64_t n = h.size();
      f.write(reinterpret_cast<const char*>(&n), 8);
      f.write(h.data(), static_cast<std::streamsize>(h.size()));
      for (const OutTensor* o : shards[si]) {
        std::string bytes;
        if (o->role == Role::plain) {
          bytes = plain_bytes(*o);
        } else {
          auto it = cache.find(o->module);
          if (it == cache.end()) it = cache.emplace(o->module, quantize_module(o->module)).first;
          std::string& part = o->role == Role::words    ? it->second.words
                              : o->role == Role::scales ? it->second.scales
                                                        : it->second.biases;
          bytes = std::move(part);
          part = "written";
          if (it->second.words == "written" && it->second.scales == "written" &&
              it->second.biases == "written")
            cache.erase(it);
        }
        if (static_cast<int64_t>(bytes.size()) != o->nbytes())
          throw_error(ErrorCode::invalid_file, "quantize: {} has {} bytes, expected {}", o->name,
                      bytes.size(), o->nbytes());
        f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      }
      if (!f) throw_error(ErrorCode::invalid_argument, "quantize: cannot write {}", path);
    }
    nlohmann::json index = {{"metadata", {{"total_size", total}, {"total_parameters", params}}},
                            {"weight_map", weight_map}};
    std::ofstream(std::filesystem::path(a_.out) / "model.safetensors.index.json") << index.dump(4) << "\n";
    nlohmann::json config = config_;
    config["quantization"] = quant_;
    config["quantization_config"] = quant_;
    std::ofstream(std::filesystem::path(a_.out) / "config.json") << config.dump(4) << "\n";
    for (const auto& entry : std::filesystem::directory_iterator(a_.dir)) {
      const std::string fname = entry.path().filename().string();
      if (!entry.is_regular_file() || fname == "config.json" || fname.ends_with(".safetensors") ||
          fname == "model.safetensors.index.json")
        continue;
      std::filesystem::copy_file(entry.path(), std::filesystem::path(a_.out) / fname,
                                 std::filesystem::copy_options::overwrite_existing);
    }
    std::map<int, int> at_bits;  // bits → modules
    for (const auto& [mod, p] : params_) ++at_bits[p.bits];
    std::string widths;
    for (const auto& [b, n] : at_bits)
      widths.append(widths.empty() ? "" : ", ").append(fmt::format("{} at {}-bit", n, b));
    fmt::print("keel quantize: {} modules{} ({}; group {}), {} tensors in {} shard{}, {} -> {}\n",
               params_.size(), a_.recipe.empty() ? "" : " by " + a_.recipe, widths.empty() ? "none" : widths,
               a_.group_size, out_.size(), shards.size(), shards.size() == 1 ? "" : "s", format_bytes(total),
               a_.out);
  }

  const QuantizeArgs& a_;
  WeightStore store_;
  nlohmann::json config_, quant_;
  ModelConfig cfg_;
  Family family_ = Family::llama;
  std::optional<Recipe> recipe_;
  std::map<std::string, Source> sources_;         // MLX name → source
  std::vector<OutTensor> out_;                    // sorted by name
  std::map<std::string, QuantParams> params_;     // quantized module → its width
  std::map<std::string, std::string> source_of_;  // quantized module → its source's name
};

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "quantize",
      "Write an MLX affine-quantized folder (mlx-lm's layout, MLX's CPU quantizer) from a bf16 one");
  auto a = std::make_shared<QuantizeArgs>();
  cmd->add_option("-m,--model", a->dir, "Hugging Face model folder (bf16, f16 or f32)")->required();
  cmd->add_option("-o,--out", a->out, "Folder to write")->required();
  cmd->add_option(
         "--bits", a->bits,
         "Bits per weight (2, 3, 4, 5, 6, 8; default 4); with --recipe only the config's top-level bits, "
         "as in mlx-lm")
      ->check(CLI::IsMember({2, 3, 4, 5, 6, 8}));
  cmd->add_option("--group-size", a->group_size, "Weights per scale and bias (32, 64, 128; default 64)")
      ->check(CLI::IsMember({32, 64, 128}));
  cmd->add_option(
      "--recipe", a->recipe,
      "mlx-lm's mixed recipe: mixed_2_6, mixed_3_4, mixed_3_6 or mixed_4_6 (low_high bits; "
      "mlx_lm/convert.py mixed_quant_predicate_builder): v_proj and down_proj of the first and last "
      "eighths of the layers and of every third layer between, and lm_head, at the high bits, every "
      "other module at the low bits, all at --group-size, each a per-module config entry. It "
      "replaces the model's own predicate (so the Qwen3.5-MoE router and shared-expert gate are not "
      "8-bit) and --bits only sets the top-level bits, both as mlx-lm does");
  cmd->add_option("--keep", a->keep, "Modules whose path matches this regex stay in float");
  cmd->add_option("--max-shard-bytes", a->max_shard_bytes, "Largest shard (default 5 GiB, mlx-lm's)")
      ->check(CLI::PositiveNumber);
  cmd->callback([a] {
    if (!a->recipe.empty()) find_recipe(a->recipe);  // an unknown name fails before anything is read
    if (std::filesystem::exists(std::filesystem::path(a->out) / "config.json"))
      throw_error(ErrorCode::invalid_argument, "quantize: {} already holds a model; pick an empty folder",
                  a->out);
    Quantizer(*a).run();
  });
}

}  // namespace keel::cli
