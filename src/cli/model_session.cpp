#include "cli/model_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#ifdef KEEL_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif
#include "core/error.h"
#include "core/sysmem.h"
#include "engine/scheduler.h"
#include "load/json_util.h"
#include "load/model_file_checks.h"

namespace keel::cli {

// The bundled default model: ./models/<name>, else next to the keel binary's folder (build/keel → models/).
std::string default_model_dir() {
  const char* name = "models/keel-brown-nemotron-h-8m";
  std::vector<std::filesystem::path> candidates{std::filesystem::current_path() / name};
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path().parent_path() / name);
    candidates.push_back(exe.parent_path() / name);
  }
  for (const std::filesystem::path& p : candidates)
    if (std::filesystem::exists(p / "config.json", ec)) return p.string();
  throw_error(ErrorCode::invalid_argument,
              "no --model given and the bundled model ({}) is not next to keel; pass "
              "--model DIR (a Hugging Face folder with config.json, *.safetensors and tokenizer.json)",
              name);
}

void check_model_dir(const std::string& dir) {
  std::error_code ec;
  auto config = std::filesystem::path(dir) / "config.json";
  if (std::filesystem::symlink_status(config, ec).type() == std::filesystem::file_type::not_found)
    throw_error(ErrorCode::invalid_argument,
                "--model {}: no config.json there (expected a Hugging Face model folder)", dir);
}

namespace {

// A half-precision float's exponent bits all set: Inf or NaN. f16: 0x7C00; bf16: 0x7F80.
bool half_not_finite(uint16_t bits, uint16_t exponent_mask) {
  return (bits & exponent_mask) == exponent_mask;
}

}  // namespace

void check_tensors_finite(const WeightStore& weights) {
  for (const std::string& name : weights.names()) {
    Tensor t = weights.mapped(name);
    const auto* bytes = static_cast<const uint8_t*>(t.data());
    const int64_t n = t.numel();
    auto fail = [&](int64_t i) {
      throw_error(ErrorCode::invalid_file,
                  "{}: tensor {} holds a NaN or an infinity (element {} of {}; --check-tensors)",
                  weights.folder(), name, i, n);
    };
    auto half_at = [&](int64_t byte_offset) {
      uint16_t h;
      std::memcpy(&h, bytes + byte_offset, 2);
      return h;
    };
    switch (t.dtype()) {
      case DType::f32:
        for (int64_t i = 0; i < n; ++i) {
          float x;
          std::memcpy(&x, bytes + 4 * i, 4);
          if (!std::isfinite(x)) fail(i);
        }
        break;
      case DType::f16:
      case DType::bf16: {
        const uint16_t mask = t.dtype() == DType::f16 ? 0x7C00 : 0x7F80;
        for (int64_t i = 0; i < n; ++i)
          if (half_not_finite(half_at(2 * i), mask)) fail(i);
        break;
      }
      default:
        break;  // integer tensors (MLX packed words: u32; their scales and biases are float tensors)
    }
  }
}

void add_session_options(CLI::App& cmd, SessionOptions& o) {
  cmd.add_option(
      "-m,--model", o.dir,
      "Hugging Face model folder (config.json + safetensors + tokenizer.json); default: the bundled model");
  cmd.add_option("-t,--threads", o.threads, "CPU threads (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option(
      "--memory-limit", o.memory_limit,
      "Memory budget: bytes (\"12GiB\") or a fraction of RAM (\"0.5\"); default: what is free now, less a "
      "margin");
  cmd.add_option("--device", o.device, "cpu or cuda[:N]")->capture_default_str();
  cmd.add_flag("--check-tensors", o.check_tensors,
               "Scan every weight for NaN and infinity at load (slower start)");
  add_cache_type_option(cmd, o.cache_type);
}

void add_cache_type_option(CLI::App& cmd, std::string& value) {
  cmd.add_option("--cache-type", value,
                 "KV cache elements: f32 (keel's reference precision) or f16 (half the memory and the decode "
                 "bytes)")
      ->check(CLI::IsMember({"f32", "f16"}))
      ->capture_default_str();
}

void check_cache_type(const Backend& be, DType kv) {
  if (!be.supports(Op::attention, kv))
    throw_error(ErrorCode::unsupported, "--cache-type {}: {} reads an f32 KV cache only", dtype_name(kv),
                be.name());
}

DType parse_cache_type(const std::string& name) {
  if (name == "f32") return DType::f32;
  if (name == "f16") return DType::f16;
  throw_error(ErrorCode::invalid_argument, "--cache-type {}: f32 or f16", name);
}

int64_t memory_limit_bytes(const std::string& flag) {
  MemoryFacts facts = read_memory_facts();
  return flag.empty() ? default_cpu_budget(facts) : parse_memory_limit(flag, facts.mem_total);
}

namespace {

// "cuda" → 0, "cuda:N" → N; nullopt for "cpu"; Error(invalid_argument) for anything else.
std::optional<int> cuda_index(const std::string& device) {
  if (device == "cpu") return std::nullopt;
  if (device == "cuda") return 0;
  if (device.starts_with("cuda:") && device.size() > 5 && device.size() <= 8 &&
      device.find_first_not_of("0123456789", 5) == std::string::npos)
    return std::stoi(device.substr(5));
  throw_error(ErrorCode::invalid_argument, "--device {}: expected cpu or cuda[:N]",
              clip_for_message(device, 40));
}

}  // namespace

void check_device(const std::string& device) {
  const std::optional<int> gpu = cuda_index(device);
  if (!gpu) return;
#ifdef KEEL_HAVE_CUDA
  cuda::device_info(*gpu);
#else
  throw_error(ErrorCode::unsupported, "--device {}: this keel was built without CUDA; use --device cpu",
              device);
#endif
}

Compute make_compute(const std::string& device, const std::string& limit_flag, int64_t held_back,
                     int threads) {
  Compute c;
  check_device(device);
  const std::optional<int> gpu = cuda_index(device);
  if (!gpu) {
    const int64_t total = memory_limit_bytes(limit_flag);
    const int64_t limit = total - held_back;
    if (limit <= 0)
      throw_error(ErrorCode::out_of_memory,
                  "--memory-limit {} ({} bytes) leaves nothing for the model after {} held back for requests",
                  format_bytes(total), total, format_bytes(held_back));
    // Released step buffers stay mapped for reuse up to min(32 MiB, limit / 32) (HostAllocator).
    c.allocator = std::make_unique<HostAllocator>(std::min<int64_t>(int64_t{32} << 20, limit / 32));
    c.pool = std::make_unique<MemoryPool>("cpu", limit, c.allocator.get());
    c.be = std::make_unique<CpuBackend>(*c.pool, threads);
    return c;
  }
#ifdef KEEL_HAVE_CUDA
  const cuda::DeviceInfo info = cuda::device_info(*gpu);  // names what exists when the index does not
  const int64_t margin = std::max<int64_t>(int64_t{512} << 20, info.total_bytes / 20);
  int64_t limit =
      limit_flag.empty() ? info.free_bytes - margin : parse_memory_limit(limit_flag, info.total_bytes);
  if (limit <= 0 || limit > info.free_bytes)
    throw_error(ErrorCode::out_of_memory, "cuda:{}: a device memory limit of {} with {} free of {} ({})",
                *gpu, format_bytes(std::max<int64_t>(limit, 0)), format_bytes(info.free_bytes),
                format_bytes(info.total_bytes),
                limit_flag.empty() ? "the default leaves a margin" : "--memory-limit");
  auto arena = std::make_unique<cuda::ArenaAllocator>(*gpu, limit);
  c.pool = std::make_unique<MemoryPool>(fmt::format("cuda:{}", *gpu), limit, arena.get());
  c.allocator = std::move(arena);
  c.be = std::make_unique<CudaBackend>(*c.pool, *gpu);
  // The host's share. The device samples its own logits (Scheduler::deliver → ops::sample_rows on the model's
  // backend); this backend runs only TokenChooser::choose, for a row that is chosen on the host (a chooser
  // that does not prepare(), or a model without a sampling backend).
  c.host_pool = std::make_unique<MemoryPool>("cpu", memory_limit_bytes(""));
  c.host = std::make_unique<CpuBackend>(*c.host_pool, 1);
  return c;
#else
  (void)gpu;
  throw_error(ErrorCode::internal, "--device {}: no CUDA in this build", device);  // check_device refused it
#endif
}

bool device_context_lost(const std::string& device) {
#ifdef KEEL_HAVE_CUDA
  return cuda_index(device).has_value() && cuda::context_lost();
#else
  (void)device;
  return false;
#endif
}

int64_t device_free_bytes(const std::string& device) {
#ifdef KEEL_HAVE_CUDA
  if (const std::optional<int> gpu = cuda_index(device)) return cuda::free_bytes(*gpu);
#endif
  (void)device;
  return -1;
}

ModelSession open_session(const SessionOptions& o, bool need_tokenizer) {
  ModelSession s;
  s.dir = o.dir.empty() ? default_model_dir() : o.dir;
  check_model_dir(s.dir);
  if (o.threads < 0 || o.threads > kMaxThreads)
    throw_error(ErrorCode::invalid_argument, "--threads {}: expected 0 (all cores) to {}", o.threads,
                kMaxThreads);
  check_config_values(s.dir);
  s.compute = make_compute(o.device, o.memory_limit, o.held_back_bytes, o.threads);
  s.pool = s.compute.pool.get();
  s.be = s.compute.be.get();
  const int64_t limit = s.pool->limit();
  const DType kv = parse_cache_type(o.cache_type);
  check_cache_type(*s.be, kv);
  s.loaded = models::load_model(s.dir, *s.be, kv);
  if (o.check_tensors) check_tensors_finite(*s.loaded.weights);
  check_startup_memory(s.model(), *s.pool);
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(s.dir) / "tokenizer.json", ec)) {
    s.tok = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::load(s.dir));
  } else if (need_tokenizer) {
    throw_error(ErrorCode::invalid_file, "{}: no tokenizer.json (pass token ids instead)", s.dir);
  }
  fmt::print(stderr, "keel: {}: {} ({} layers), weights {}, memory limit {}, {}\n", s.dir,
             s.model().model_type(), s.loaded.config.num_layers(),
             format_bytes(s.loaded.weights->total_bytes()), format_bytes(limit), s.be->name());
  return s;
}

}  // namespace keel::cli
