// What `keel run`, `keel perplexity` (and later bench/serve) share: the CPU pool under the memory limit, the
// backend, the loaded model (its weights counted in the pool) and its tokenizer.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "core/pool.h"
#include "models/loader.h"
#include "tokenizer/tokenizer.h"

namespace keel::cli {

// --threads above this is refused (a typo, not a machine): each thread is a kernel worker.
inline constexpr int kMaxThreads = 1024;

struct SessionOptions {
  std::string dir;                 // empty: the bundled model (default_model_dir)
  std::string device = "cpu";      // --device: cpu or cuda[:N]
  int threads = 0;                 // 0: all cores
  bool check_tensors = false;      // --check-tensors: scan the weights for NaN/Inf after loading
  std::string memory_limit;        // bytes or a fraction of MemTotal; empty: default_cpu_budget
  int64_t held_back_bytes = 0;     // taken off the limit before the pool gets it (serve's request budget)
  std::string cache_type = "f32";  // --cache-type: the KV cache's elements, f32 or f16 (parse_cache_type)
};

// --cache-type's value as a dtype: "f32" or "f16" (llama.cpp's -ctk/-ctv f16 default halves the cache; keel's
// default is f32, its reference precision). CPU only for f16: the CUDA attention reads f32.
DType parse_cache_type(const std::string& name);
// Error(unsupported) naming the backend when its attention cannot read a `kv` cache.
void check_cache_type(const Backend& be, DType kv);
// Adds --cache-type to `cmd`, stored in `value`.
void add_cache_type_option(CLI::App& cmd, std::string& value);

// The bytes --memory-limit allows in all (`flag` as given; empty: default_cpu_budget of this machine).
int64_t memory_limit_bytes(const std::string& flag);

// -m/--model, -t/--threads, --memory-limit, --device.
void add_session_options(CLI::App& cmd, SessionOptions& o);

// What a command computes on: the device's pool and backend and, for a device whose memory the host cannot
// read, a one-thread CPU backend over a small host pool for the host's share (TokenChooser::choose over a
// host row; the scheduler samples the device's logits on the device).
struct Compute {
  std::unique_ptr<DeviceAllocator> allocator;  // a device's one cudaMalloc, or the CPU's HostAllocator
  std::unique_ptr<MemoryPool> pool;
  std::unique_ptr<Backend> be;
  std::unique_ptr<MemoryPool> host_pool;
  std::unique_ptr<CpuBackend> host;
  Backend& host_backend() { return host ? *host : *be; }
};
// Checks --device before anything is loaded: "cpu", or "cuda[:N]" naming a device this machine has
// (Error(invalid_argument) naming what exists) in a build with CUDA (Error(unsupported) otherwise).
void check_device(const std::string& device);
// `device` is "cpu" or "cuda[:N]"; `limit_flag` is --memory-limit as given (on a GPU: device bytes, or a
// fraction of the device's memory; empty: what cudaMemGetInfo says is free, less max(512 MiB, 5 %)),
// `held_back` bytes are taken off a CPU limit (serve's request budget). Error(invalid_argument) for a device
// that does not exist or a malformed name; Error(unsupported) for cuda in a build without it.
Compute make_compute(const std::string& device, const std::string& limit_flag, int64_t held_back,
                     int threads);

// Whether `device` (cpu or cuda[:N]) has lost its CUDA context to a sticky error (always false for cpu).
bool device_context_lost(const std::string& device);
// What the device's runtime says is free (bytes; cudaMemGetInfo, the outside view of the device pool); −1 for
// cpu.
int64_t device_free_bytes(const std::string& device);

// The bundled default model: ./models/keel-brown-nemotron-h-8m, else next to the keel binary's folder
// (build/keel → models/). Throws Error(invalid_argument) saying to pass --model when it is not there.
std::string default_model_dir();
// Throws Error(invalid_argument) naming --model when `dir` has no config.json.
void check_model_dir(const std::string& dir);

// Throws Error(invalid_file) naming the folder, the tensor and the element when a float weight (or a
// quantized block's scale) is NaN or infinite.
void check_tensors_finite(const WeightStore& weights);

struct ModelSession {
  std::string dir;  // the model folder used: --model, or the bundled model
  Compute compute;
  MemoryPool* pool = nullptr;  // compute's
  Backend* be = nullptr;
  models::LoadedModel loaded;
  std::unique_ptr<tokenizer::Tokenizer> tok;  // null when the folder has no tokenizer.json
  Model& model() { return *loaded.model; }
  Backend& host_backend() { return compute.host_backend(); }
};

ModelSession open_session(const SessionOptions& o, bool need_tokenizer);

}  // namespace keel::cli
