#include "models/random_weights.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <vector>

#include "backend/thread_pool.h"
#include "core/error.h"
#include "core/quant.h"
#include "load/json_util.h"
#include "models/registry.h"

namespace keel::models {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t name_hash(const std::string& name, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ull ^ splitmix64(seed);  // FNV-1a over the name
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return splitmix64(h);
}

void store_value(DType dtype, void* base, int64_t i, float v) {
  switch (dtype) {
    case DType::bf16:
      static_cast<uint16_t*>(base)[i] = f32_to_bf16(v);
      break;
    case DType::f16:
      static_cast<uint16_t*>(base)[i] = f32_to_f16(v);
      break;
    default:
      static_cast<float*>(base)[i] = v;
      break;
  }
}

// Fills `t` (contiguous) in place: `constant` when set, else uniform in [−a, a) from the hash of (key,
// index).
void fill(ThreadPool* tp, Tensor& t, uint64_t key, float a, bool constant) {
  const int64_t n = t.numel();
  constexpr int64_t kBlock = int64_t{1} << 16;  // elements per work item (even: two values per hash)
  auto run = [&](int64_t b0, int64_t b1, int) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t end = std::min(n, (b + 1) * kBlock);
      for (int64_t i = b * kBlock; i < end; i += 2) {
        const uint64_t r = splitmix64(key + static_cast<uint64_t>(i / 2));
        for (int64_t j = 0; j < 2 && i + j < end; ++j) {
          const uint32_t bits = static_cast<uint32_t>(r >> (32 * j));
          const float u = static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);  // [0, 1)
          store_value(t.dtype(), t.data(), i + j, constant ? a : (2 * u - 1) * a);
        }
      }
    }
  };
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  if (tp && blocks > 1)
    tp->parallel_for(blocks, run);
  else
    run(0, blocks, 0);
}

// Packed words: random bits from the hash of (key, index), every q uniform in [0, 2^bits).
void fill_words(ThreadPool* tp, Tensor& t, uint64_t key) {
  const int64_t n = t.numel();
  constexpr int64_t kBlock = int64_t{1} << 16;
  auto run = [&](int64_t b0, int64_t b1, int) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t end = std::min(n, (b + 1) * kBlock);
      for (int64_t i = b * kBlock; i < end; ++i)
        t.ptr<uint32_t>()[i] = static_cast<uint32_t>(splitmix64(key + static_cast<uint64_t>(i)));
    }
  };
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  if (tp && blocks > 1)
    tp->parallel_for(blocks, run);
  else
    run(0, blocks, 0);
}

// The host threads that make the values: the backend's own (CPU), else a pool of every core made for the
// load (a device's weights are made on the host: 31.6 B values take ~4 s on 16 cores instead of a minute).
ThreadPool* fill_threads(Backend& be, std::unique_ptr<ThreadPool>& own) {
  if (ThreadPool* tp = be.threads()) return tp;
  if (!own) own = std::make_unique<ThreadPool>(0);
  return own.get();
}

// Runs `fill_host(view)` over t's values: in place when the host writes the backend's memory, else into a
// host buffer of t's bytes that is then uploaded (one tensor at a time).
template <class Fill>
void write_values(Backend& be, Tensor& t, Fill fill_host) {
  if (be.host_addressable()) {
    fill_host(t);
    return;
  }
  std::vector<uint8_t> host(static_cast<size_t>(t.nbytes()));
  Tensor view = Tensor::borrow(host.data(), t.dtype(), t.shape().data(), t.ndim());
  fill_host(view);
  be.upload(host.data(), t.nbytes(), t);
}

}  // namespace

DType config_weight_dtype(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  nlohmann::json root = parse_json_lenient(read_text_file(path, 16 << 20), path);
  std::string name = "bfloat16";
  for (const char* key : {"dtype", "torch_dtype"}) {
    if (root.is_object() && root.contains(key) && root[key].is_string()) {
      name = root[key].get<std::string>();
      break;
    }
  }
  if (name == "bfloat16") return DType::bf16;
  if (name == "float16") return DType::f16;
  if (name == "float32") return DType::f32;
  throw_error(ErrorCode::unsupported,
              "{}: dtype \"{}\" (random weights are made in bfloat16, float16 or float32)", path,
              clip_for_message(name, 40));
}

LoadedModel random_weights_model(const ModelConfig& config, DType dtype, Backend& be, uint64_t seed,
                                 const std::string& label, QuantParams quant) {
  if (dtype != DType::bf16 && dtype != DType::f16 && dtype != DType::f32)
    throw_error(ErrorCode::unsupported, "{}: random weights in {} (only bf16, f16, f32)", label,
                dtype_name(dtype));
  LoadedModel m;
  m.config = config;
  if (quant.bits > 0) {
    if (!quant::valid_bits(quant.bits) || !quant::valid_group_size(quant.group_size))
      throw_error(ErrorCode::invalid_argument,
                  "{}: {}-bit, group {} (bits 2, 3, 4, 5, 6, 8; groups 32, 64, 128)", label, quant.bits,
                  quant.group_size);
    QuantizationConfig q;
    q.base = quant, q.every_matrix = true;
    m.config.quantization = q;
  }
  ModelFactory make = find_model_factory(config.model_type);
  // Modules whose scales were made: their .weight is packed words. (The binder asks for scales first.)
  auto packed = std::make_shared<std::set<std::string>>();
  auto own_threads = std::make_shared<std::unique_ptr<ThreadPool>>();
  m.weights = std::make_unique<WeightStore>(
      WeightStore::on_demand(label, [&be, dtype, seed, quant, packed, own_threads](
                                        const std::string& name, const std::vector<int64_t>& shape) {
        ThreadPool* tp = fill_threads(be, *own_threads);
        auto base_of = [&](std::string_view suffix) {
          return name.ends_with(suffix) ? name.substr(0, name.size() - suffix.size()) : std::string();
        };
        if (quant.bits > 0) {
          const std::string sb = base_of(".scales"), bb = base_of(".biases"), wb = base_of(".weight");
          if (!sb.empty() || !bb.empty()) {  // [..., in / group]: the matrix's in is groups · group_size
            const int64_t in = shape.back() * quant.group_size;
            const float a = std::sqrt(3.0f / static_cast<float>(std::max<int64_t>(1, in)));
            const float v = !sb.empty() ? 2 * a / static_cast<float>((1 << quant.bits) - 1) : -a;
            Tensor t = Tensor::empty(be.pool(), dtype, shape.data(), static_cast<int>(shape.size()), name);
            write_values(be, t, [&](Tensor& h) { fill(tp, h, 0, v, true); });
            packed->insert(!sb.empty() ? sb : bb);
            return t;
          }
          if (!wb.empty() && packed->count(wb)) {
            Tensor t =
                Tensor::empty(be.pool(), DType::u32, shape.data(), static_cast<int>(shape.size()), name);
            write_values(be, t, [&](Tensor& h) { fill_words(tp, h, name_hash(name, seed)); });
            return t;
          }
        }
        Tensor t = Tensor::empty(be.pool(), dtype, shape.data(), static_cast<int>(shape.size()), name);
        const bool norm = shape.size() == 1 && name.find("norm") != std::string::npos;
        const float a = shape.size() == 1
                            ? (norm ? 1.0f : 0.5f)
                            : std::sqrt(3.0f / static_cast<float>(std::max<int64_t>(1, shape.back())));
        write_values(be, t, [&](Tensor& h) { fill(tp, h, name_hash(name, seed), a, norm); });
        return t;
      }));
  try {
    m.model = make(m.config, *m.weights, be);
    own_threads->reset();  // the load's own fill threads (a device's) end with it
  } catch (const Error& e) {
    if (std::string_view(e.what()).find(label) != std::string_view::npos) throw;
    // The pool's refusal names bytes and the limit; say what ran out (the system may refuse below the limit).
    const bool oom = e.code() == ErrorCode::out_of_memory &&
                     std::string_view(e.what()).find("memory") == std::string_view::npos;
    throw Error(e.code(), label + (oom ? ": out of memory making the weights: " : ": ") + e.what());
  }
  return m;
}

LoadedModel random_weights_model(const std::string& dir, Backend& be, uint64_t seed, QuantParams quant,
                                 DType kv_cache) {
  ModelConfig cfg = load_model_config(dir);
  cfg.kv_cache_dtype = kv_cache;
  return random_weights_model(cfg, config_weight_dtype(dir), be, seed, dir + " (random weights)", quant);
}

}  // namespace keel::models
